package main

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	ggcrmutate "github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/cosign/v3/pkg/cosign/attestation"
	"github.com/sigstore/cosign/v3/pkg/oci"
	"github.com/sigstore/cosign/v3/pkg/oci/layout"
	"github.com/sigstore/cosign/v3/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/signed"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	"github.com/sigstore/cosign/v3/pkg/types"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	sigpayload "github.com/sigstore/sigstore/pkg/signature/payload"
)

// PredicateSPDX is the in-toto predicate type of the SBOM attestation, the
// one `cosign attest --type spdxjson` writes and an ImageConfig's
// `attestations[].predicateType: spdxjson` asks for.
const PredicateSPDX = "https://spdx.dev/Document"

// loadSigner reads a cosign private key from a file or, for env://VAR, from
// the variable VAR; COSIGN_PASSWORD decrypts it, as with cosign.
func loadSigner(ref string) (signature.SignerVerifier, error) {
	var pem []byte
	if v, ok := strings.CutPrefix(ref, "env://"); ok {
		pem = []byte(os.Getenv(v))
		if len(pem) == 0 {
			return nil, fmt.Errorf("%s is empty", v)
		}
	} else {
		b, err := os.ReadFile(ref)
		if err != nil {
			return nil, err
		}
		pem = b
	}
	sv, err := cosign.LoadPrivateKey(pem, []byte(os.Getenv("COSIGN_PASSWORD")), nil)
	if err != nil {
		return nil, fmt.Errorf("loading the private key %s: %w", ref, err)
	}
	return sv, nil
}

// pushForm is the package image as `crossplane xpkg push` uploads one
// .xpkg: its layers carry the annotations the .xpkg keeps as config labels.
// Its digest is the one Crossplane pulls and verifies.
func pushForm(img v1.Image) (v1.Image, error) {
	return xpkg.AnnotateLayers(img)
}

// indexForm is the index `crossplane xpkg push -f A.xpkg,B.xpkg` uploads for
// the push forms of several package files, in that order: each image with
// its media type and its config's platform.
func indexForm(imgs []v1.Image) (v1.ImageIndex, error) {
	adds := make([]ggcrmutate.IndexAddendum, 0, len(imgs))
	for _, img := range imgs {
		mt, err := img.MediaType()
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		adds = append(adds, ggcrmutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: mt,
			Platform:  &v1.Platform{Architecture: cfg.Architecture, OS: cfg.OS, OSVersion: cfg.OSVersion},
		}})
	}
	return ggcrmutate.AppendManifests(empty.Index, adds...), nil
}

// signatures signs the image or index h as `cosign sign` does (a
// simple-signing payload naming repo and h, the signature in the layer's
// dev.cosignproject.cosign/signature annotation) and, when sbom is not nil,
// attests it as `cosign attest --type spdxjson` does (a DSSE envelope of an
// in-toto statement). Nothing goes to a transparency log.
func signatures(h v1.Hash, repo string, sv signature.SignerVerifier, sbom []byte) (sig, att oci.Signature, err error) {
	r, err := name.NewRepository(repo)
	if err != nil {
		return nil, nil, err
	}
	payload, err := sigpayload.Cosign{Image: r.Digest(h.String())}.MarshalJSON()
	if err != nil {
		return nil, nil, err
	}
	raw, err := sv.SignMessage(bytes.NewReader(payload))
	if err != nil {
		return nil, nil, err
	}
	if sig, err = static.NewSignature(payload, base64.StdEncoding.EncodeToString(raw)); err != nil {
		return nil, nil, err
	}
	if sbom == nil {
		return sig, nil, nil
	}
	st, err := attestation.GenerateStatement(attestation.GenerateOpts{
		Predicate: bytes.NewReader(sbom),
		Type:      "spdxjson",
		Digest:    h.Hex,
		Repo:      r.String(),
	})
	if err != nil {
		return nil, nil, err
	}
	stmt, err := json.Marshal(st)
	if err != nil {
		return nil, nil, err
	}
	env, err := dsse.WrapSigner(sv, types.IntotoPayloadType).SignMessage(bytes.NewReader(stmt))
	if err != nil {
		return nil, nil, err
	}
	att, err = static.NewAttestation(env, static.WithLayerMediaType(types.DssePayloadType),
		static.WithAnnotations(map[string]string{"predicateType": PredicateSPDX}))
	return sig, att, err
}

// signPackage writes the SBOM (to sbomFile) and the signed layout (to dir)
// of the package files: one image, or the multi-platform index of several.
// It returns the signed digest.
func signPackage(files []string, pkgName, version, repo string, sv signature.SignerVerifier, sbomFile, dir string) (v1.Hash, error) {
	imgs := make([]v1.Image, 0, len(files))
	for _, f := range files {
		img, err := tarball.ImageFromPath(f, nil)
		if err != nil {
			return v1.Hash{}, err
		}
		if img, err = pushForm(img); err != nil {
			return v1.Hash{}, fmt.Errorf("%s: %w", f, err)
		}
		imgs = append(imgs, img)
	}
	var idx v1.ImageIndex
	var h v1.Hash
	var err error
	if len(imgs) == 1 {
		h, err = imgs[0].Digest()
	} else {
		if idx, err = indexForm(imgs); err == nil {
			h, err = idx.Digest()
		}
	}
	if err != nil {
		return v1.Hash{}, err
	}
	sbom, err := buildSBOM(h, idx != nil, imgs, pkgName, version, repo)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.WriteFile(sbomFile, sbom, 0o644); err != nil {
		return v1.Hash{}, err
	}
	sig, att, err := signatures(h, repo, sv, sbom)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	if idx == nil {
		si, err := mutate.AttachSignatureToImage(signed.Image(imgs[0]), sig)
		if err == nil {
			si, err = mutate.AttachAttestationToImage(si, att)
		}
		if err != nil {
			return v1.Hash{}, err
		}
		return h, layout.WriteSignedImage(dir, si)
	}
	sii, err := mutate.AttachSignatureToImageIndex(signed.ImageIndex(idx), sig)
	if err == nil {
		sii, err = mutate.AttachAttestationToImageIndex(sii, att)
	}
	if err != nil {
		return v1.Hash{}, err
	}
	return h, layout.WriteSignedImageIndex(dir, sii)
}

// remoteOptions are go-containerregistry's options for ctx with the default
// keychain.
func remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
}

// pushLayout pushes a layout that `sign package` wrote to ref: the image,
// then its signature and attestation under cosign's tags
// (sha256-<digest>.sig, .att) in ref's repository, as `cosign load` does. It
// returns the image's digest.
func pushLayout(dir string, ref name.Reference, opts ...ociremote.Option) (v1.Hash, error) {
	if len(opts) == 0 {
		opts = remoteOpts(context.Background())
	}
	sii, err := layout.SignedImageIndex(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	var top interface{ Digest() (v1.Hash, error) }
	si, err := sii.SignedImage(v1.Hash{})
	if err != nil {
		return v1.Hash{}, err
	}
	if si != nil {
		top = si
	} else {
		ii, err := sii.SignedImageIndex(v1.Hash{})
		if err != nil {
			return v1.Hash{}, err
		}
		if ii == nil {
			return v1.Hash{}, fmt.Errorf("%s holds no signed image or index", dir)
		}
		top = ii
	}
	if err := ociremote.WriteSignedImageIndexImages(ref, sii, dir, opts...); err != nil {
		return v1.Hash{}, err
	}
	return top.Digest()
}

// Verified is what verify found.
type Verified struct {
	Signatures   int // valid signatures
	SBOMPackages int // packages in the attested SBOM, with attestations
}

// checkOpts are cosign's options for a key-signed image without a
// transparency log, as `cosign verify --key --insecure-ignore-tlog` builds
// them.
func checkOpts(pub crypto.PublicKey, opts ...ociremote.Option) (*cosign.CheckOpts, error) {
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	return &cosign.CheckOpts{
		RegistryClientOpts: opts,
		SigVerifier:        v,
		ClaimVerifier:      cosign.SimpleClaimVerifier,
		IgnoreTlog:         true,
	}, nil
}

// verify checks ref's signatures with pub through cosign's own verification
// (cosign.VerifyImageSignatures) and, with att, its SPDX attestation
// (cosign.VerifyImageAttestations).
func verify(ctx context.Context, ref name.Reference, pub crypto.PublicKey, att bool, opts ...ociremote.Option) (Verified, error) {
	if len(opts) == 0 {
		opts = remoteOpts(ctx)
	}
	co, err := checkOpts(pub, opts...)
	if err != nil {
		return Verified{}, err
	}
	sigs, _, err := cosign.VerifyImageSignatures(ctx, ref, co)
	if err != nil {
		return Verified{}, err
	}
	res := Verified{Signatures: len(sigs)}
	if !att {
		return res, nil
	}
	co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	atts, _, err := cosign.VerifyImageAttestations(ctx, ref, co)
	if err != nil {
		return res, err
	}
	for _, a := range atts {
		doc, err := spdxPredicate(a)
		if err != nil {
			return res, err
		}
		if doc != nil {
			res.SBOMPackages = len(doc.Packages)
			return res, nil
		}
	}
	return res, errors.New("no SPDX attestation among the verified ones")
}

// spdxPredicate is the SPDX document of a verified attestation, nil when
// the attestation is of another predicate type.
func spdxPredicate(a oci.Signature) (*Document, error) {
	p, err := a.Payload()
	if err != nil {
		return nil, err
	}
	var env struct {
		Payload string `json:"payload"`
	}
	if err := json.Unmarshal(p, &env); err != nil {
		return nil, err
	}
	stmt, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return nil, err
	}
	var st struct {
		PredicateType string   `json:"predicateType"`
		Predicate     Document `json:"predicate"`
	}
	if err := json.Unmarshal(stmt, &st); err != nil {
		return nil, err
	}
	if st.PredicateType != PredicateSPDX {
		return nil, nil
	}
	return &st.Predicate, nil
}
