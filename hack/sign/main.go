// Command sign gives the Crossplane packages that hack/xpkg.sh builds an SPDX
// SBOM and a cosign signature, without a network: no Rekor, no Fulcio, no TUF.
//
//	sign package --key KEY [--repo REPO] [--version V] [--out BASE] PKG.xpkg...
//	    writes BASE.spdx.json (default BASE: PKG without .xpkg), an SPDX 2.3
//	    SBOM of the Go modules compiled into the package's binaries, and
//	    BASE.cosign/, an OCI image layout in the format of `cosign save`: the
//	    package image as `crossplane xpkg push -f PKG.xpkg` uploads it (with
//	    several files, the multi-platform index `crossplane xpkg push -f
//	    A.xpkg,B.xpkg` uploads, in that order), its signature (cosign's
//	    simple-signing payload) and the SBOM as a signed in-toto attestation
//	    (predicate https://spdx.dev/Document).
//	sign push DIR REF
//	    pushes such a layout, image, signature and attestation, to REF, as
//	    `cosign load --dir DIR REF` does.
//	sign verify --key PUB [--attestation] REF
//	    verifies REF as `cosign verify --key PUB --insecure-ignore-tlog`
//	    does (and `cosign verify-attestation --type spdxjson` with
//	    --attestation), through cosign's own verification code.
//	sign genkey PREFIX
//	    writes a cosign key pair PREFIX.key (encrypted with COSIGN_PASSWORD)
//	    and PREFIX.pub.
//
// KEY is a file or env://VAR (the PEM in that variable, as cosign reads
// env://COSIGN_PRIVATE_KEY); the key's password is COSIGN_PASSWORD.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "package":
		err = runPackage(os.Args[2:])
	case "push":
		err = runPush(os.Args[2:])
	case "verify":
		err = runVerify(os.Args[2:])
	case "genkey":
		err = runGenkey(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sign %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: sign package|push|verify|genkey ... (see hack/sign/main.go)")
	os.Exit(2)
}

func runPackage(args []string) error {
	fs := flag.NewFlagSet("package", flag.ExitOnError)
	key := fs.String("key", "", "private key: a file or env://VAR (password: COSIGN_PASSWORD)")
	repo := fs.String("repo", "", "repository the package is published as (the signature's docker-reference and the attestation's subject; default xpkg.crossplane.io/armorplane/NAME)")
	version := fs.String("version", "", "the package's version, for the SBOM")
	out := fs.String("out", "", "writes OUT.spdx.json and OUT.cosign/ (default: the one package file without .xpkg); NAME is its base name")
	_ = fs.Parse(args)
	if fs.NArg() == 0 || *key == "" || (fs.NArg() > 1 && *out == "") {
		return fmt.Errorf("want --key KEY PKG.xpkg, or --key KEY --out BASE PKG.xpkg... for a multi-platform index")
	}
	if *out == "" {
		*out = strings.TrimSuffix(fs.Arg(0), filepath.Ext(fs.Arg(0)))
	}
	return packageFiles(fs.Args(), *out, *key, *repo, *version)
}

// packageFiles writes out.spdx.json and the signed layout out.cosign of the
// package files (see `sign package`).
func packageFiles(files []string, out, key, repo, version string) error {
	pkgName := filepath.Base(out)
	if repo == "" {
		repo = "xpkg.crossplane.io/armorplane/" + pkgName
	}
	sv, err := loadSigner(key)
	if err != nil {
		return err
	}
	h, err := signPackage(files, pkgName, version, repo, sv, out+".spdx.json", out+".cosign")
	if err != nil {
		return err
	}
	what := "image"
	if len(files) > 1 {
		what = fmt.Sprintf("index of %d platforms", len(files))
	}
	fmt.Printf(">> %s.cosign: %s %s signed, SBOM %s.spdx.json\n", out, what, h, out)
	return nil
}

func runPush(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("want DIR REF")
	}
	ref, err := name.ParseReference(args[1])
	if err != nil {
		return err
	}
	d, err := pushLayout(args[0], ref)
	if err != nil {
		return err
	}
	fmt.Printf(">> %s pushed to %s (%s) with its signature and attestation\n", args[0], ref, d)
	return nil
}

func runVerify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	key := fs.String("key", "", "public key (PEM file)")
	att := fs.Bool("attestation", false, "also verify the SPDX SBOM attestation")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *key == "" {
		return fmt.Errorf("want --key PUB REF")
	}
	ref, err := name.ParseReference(fs.Arg(0))
	if err != nil {
		return err
	}
	pem, err := os.ReadFile(*key)
	if err != nil {
		return err
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pem)
	if err != nil {
		return err
	}
	res, err := verify(context.Background(), ref, pub, *att)
	if err != nil {
		return err
	}
	fmt.Printf(">> %s: %d valid signature(s)", ref, res.Signatures)
	if *att {
		fmt.Printf(", SBOM attestation of %d package(s)", res.SBOMPackages)
	}
	fmt.Println()
	return nil
}

func runGenkey(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("want PREFIX")
	}
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(os.Getenv("COSIGN_PASSWORD")), nil })
	if err != nil {
		return err
	}
	if err := os.WriteFile(args[0]+".key", kb.PrivateBytes, 0o600); err != nil {
		return err
	}
	return os.WriteFile(args[0]+".pub", kb.PublicBytes, 0o644)
}

// remoteOpts are the registry options of push and verify: the default
// keychain (~/.docker/config.json), as cosign and the crossplane CLI use.
func remoteOpts(ctx context.Context) []ociremote.Option {
	return []ociremote.Option{ociremote.WithRemoteOptions(remoteOptions(ctx)...)}
}
