package iam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// apiPackages are the Google API client packages whose service methods are
// GCP calls, by the prefix of the method ids they serve.
var apiPackages = map[string]string{
	"google.golang.org/api/compute/v1":         "compute",
	"google.golang.org/api/networksecurity/v1": "networksecurity",
}

// binaries are the commands whose code the scan covers: the provider (its
// controllers and the `validate` subcommand). The emulator and the test
// harnesses, which also use the client packages, are not the provider.
var binaries = []string{"./cmd/provider"}

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	Module     *struct{ Path string }
	Standard   bool
}

// goList lists pkgs and their dependencies, with the export data of each
// (compiled into the build cache if need be).
func goList(t *testing.T, pkgs ...string) []listed {
	t.Helper()
	args := append([]string{"list", "-deps", "-export", "-json=ImportPath,Dir,Export,GoFiles,Module,Standard"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = repo.Root()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var all []listed
	d := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := d.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		all = append(all, p)
	}
	return all
}

// A call is one GCP method the code calls, and where.
type call struct {
	Method string // e.g. compute.securityPolicies.addRule
	Where  string // file:line of one call
}

// gcpCalls type-checks every package of this module that the binaries
// build (non-test files only) and returns each method of a Google API
// service that the code names: a selector whose receiver is a
// *<api>.<Name>Service. It finds the calls however they are written (a
// chain such as svc.SecurityPolicies.Get, a variable holding a service, a
// method value), because it reads types, not spellings.
func gcpCalls(t *testing.T) map[string]call {
	t.Helper()
	pkgs := goList(t, binaries...)
	exports := map[string]string{}
	var mine []listed
	for _, p := range pkgs {
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == modulePath {
			mine = append(mine, p)
		}
	}
	if len(mine) < 10 {
		t.Fatalf("go list found %d packages of %s in %v; want the provider's many", len(mine), modulePath, binaries)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	found := map[string]call{}
	for _, p := range mine {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		for sel, s := range info.Selections {
			if s.Kind() != types.MethodVal {
				continue
			}
			m, ok := methodID(s.Recv(), s.Obj().Name())
			if !ok {
				continue
			}
			if _, seen := found[m]; !seen {
				pos := fset.Position(sel.Pos())
				rel, _ := filepath.Rel(repo.Root(), pos.Filename)
				found[m] = call{Method: m, Where: fmt.Sprintf("%s:%d", rel, pos.Line)}
			}
		}
	}
	return found
}

const modulePath = "github.com/armorplane/provider-cloudarmor"

// methodID returns the REST method id of method name of a receiver of type
// recv when recv is a Google API service: compute's
// *SecurityPoliciesService and AddRule are compute.securityPolicies.addRule,
// networksecurity's *ProjectsLocationsAddressGroupsService and AddItems are
// networksecurity.projects.locations.addressGroups.addItems.
func methodID(recv types.Type, name string) (string, bool) {
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	named, ok := recv.(*types.Named)
	if !ok || named.Obj().Pkg() == nil {
		return "", false
	}
	api, ok := apiPackages[named.Obj().Pkg().Path()]
	if !ok {
		return "", false
	}
	collection, ok := strings.CutSuffix(named.Obj().Name(), "Service")
	if !ok || collection == "" {
		return "", false // the top-level *Service has no methods of its own but these
	}
	path := lowerFirst(collection)
	if api == "networksecurity" {
		path = collectionPath(collection)
	}
	return api + "." + path + "." + lowerFirst(name), true
}

// collectionPath splits the nested collections of a generated service's
// name: ProjectsLocationsAddressGroups is projects.locations.addressGroups.
// (compute's collections are not nested: SecurityPolicies is
// securityPolicies, and methodID does not split them.)
func collectionPath(name string) string {
	var parts []string
	for _, outer := range []string{"Projects", "Organizations", "Locations"} {
		if rest, ok := strings.CutPrefix(name, outer); ok && rest != "" && unicode.IsUpper(rune(rest[0])) {
			parts = append(parts, lowerFirst(outer))
			name = rest
		}
	}
	return strings.Join(append(parts, lowerFirst(name)), ".")
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
