package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Import paths the collectors recognise. A package is recognised by its import path,
// whatever name a file imports it under.
const (
	importEvent      = "github.com/crossplane/crossplane-runtime/v2/pkg/event"
	importPrometheus = "github.com/prometheus/client_golang/prometheus"
	importFnResponse = "github.com/crossplane/function-sdk-go/response"
)

// A sourceFile is one parsed Go file of the repository.
type sourceFile struct {
	// rel is the file's path from the repository's root, with forward slashes.
	rel  string
	dir  string
	fset *token.FileSet
	file *ast.File
	// imports maps the names the file imports packages under to their import paths.
	imports map[string]string
}

// A source is the parsed Go code the docs are checked against.
type source struct {
	files []*sourceFile
	// consts holds every string constant's value by package directory and name, to
	// resolve a reason or label value given as a constant.
	consts map[string]map[string]string
	// module is the module's path, to find the directory of a package it imports.
	module string
}

// A decl is a name the code declares, and where.
type decl struct {
	Name string
	At   []string // file:line, one per declaration
}

// decls are names by name.
type decls map[string]*decl

func (d decls) add(name, at string) {
	if _, ok := d[name]; !ok {
		d[name] = &decl{Name: name}
	}
	for _, a := range d[name].At {
		if a == at {
			return
		}
	}
	d[name].At = append(d[name].At, at)
}

// names returns the names, sorted.
func (d decls) names() []string {
	out := make([]string, 0, len(d))
	for n := range d {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// where returns where name is declared, for a failure message.
func (d decls) where(name string) string {
	if x, ok := d[name]; ok {
		return strings.Join(x.At, ", ")
	}
	return "?"
}

// parseSource parses every Go file under the given directories of root, leaving out
// tests and generated files (zz_generated*).
func parseSource(root, module string, dirs ...string) (*source, error) {
	s := &source{consts: map[string]map[string]string{}, module: module}
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			s.files = append(s.files, newSourceFile(filepath.ToSlash(rel), fset, f))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, f := range s.files {
		s.collectConsts(f)
	}
	return s, nil
}

// parseFiles parses Go files given as text, by relative path: for the collectors' own tests.
func parseFiles(module string, files map[string]string) (*source, error) {
	s := &source{consts: map[string]map[string]string{}, module: module}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, files[p], parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		s.files = append(s.files, newSourceFile(p, fset, f))
	}
	for _, f := range s.files {
		s.collectConsts(f)
	}
	return s, nil
}

func newSourceFile(rel string, fset *token.FileSet, f *ast.File) *sourceFile {
	sf := &sourceFile{rel: rel, dir: filepath.ToSlash(filepath.Dir(rel)), fset: fset, file: f, imports: map[string]string{}}
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		sf.imports[name] = p
	}
	return sf
}

// pos returns node's position as file:line.
func (f *sourceFile) pos(n ast.Node) string {
	return fmt.Sprintf("%s:%d", f.rel, f.fset.Position(n.Pos()).Line)
}

// isSelector reports whether e is pkg.Sel where pkg is imported from path.
func (f *sourceFile) isSelector(e ast.Expr, path, sel string) bool {
	se, ok := e.(*ast.SelectorExpr)
	if !ok || se.Sel.Name != sel {
		return false
	}
	id, ok := se.X.(*ast.Ident)
	return ok && f.imports[id.Name] == path
}

// collectConsts records the file's string constants, for resolve.
func (s *source) collectConsts(f *sourceFile) {
	for _, d := range f.file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if v, ok := stringLit(vs.Values[i]); ok {
					if s.consts[f.dir] == nil {
						s.consts[f.dir] = map[string]string{}
					}
					s.consts[f.dir][n.Name] = v
				}
			}
		}
	}
}

// stringLit returns e's value if it is a string literal, or a conversion of one
// (event.Reason("X")).
func stringLit(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		v, err := strconv.Unquote(x.Value)
		return v, err == nil
	case *ast.CallExpr:
		if len(x.Args) == 1 {
			return stringLit(x.Args[0])
		}
	case *ast.ParenExpr:
		return stringLit(x.X)
	}
	return "", false
}

// resolve returns the string value of e in f: a literal, a constant of f's package, or a
// constant of another package of the module.
func (s *source) resolve(f *sourceFile, e ast.Expr) (string, bool) {
	if v, ok := stringLit(e); ok {
		return v, true
	}
	switch x := e.(type) {
	case *ast.Ident:
		v, ok := s.consts[f.dir][x.Name]
		return v, ok
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		if !ok {
			return "", false
		}
		p, ok := f.imports[id.Name]
		if !ok || !strings.HasPrefix(p, s.module+"/") {
			return "", false
		}
		v, ok := s.consts[strings.TrimPrefix(p, s.module+"/")][x.Sel.Name]
		return v, ok
	case *ast.CallExpr:
		// A conversion of a constant: string(ReasonX), event.Reason(x).
		if len(x.Args) == 1 {
			return s.resolve(f, x.Args[0])
		}
	}
	return "", false
}

// typedConsts returns the values of the constants whose declared type is matched by
// isType, following a const block's implicit repetition of type and value.
func (s *source) typedConsts(isType func(f *sourceFile, t ast.Expr) bool) (decls, []string) {
	out := decls{}
	var unresolved []string
	for _, f := range s.files {
		for _, d := range f.file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			var typ ast.Expr
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				switch {
				case vs.Type != nil:
					typ = vs.Type
				case len(vs.Values) > 0:
					typ = nil // An untyped constant.
				}
				if typ == nil || !isType(f, typ) {
					continue
				}
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						unresolved = append(unresolved, fmt.Sprintf("%s (%s): no value of its own", n.Name, f.pos(n)))
						continue
					}
					v, ok := s.resolve(f, vs.Values[i])
					if !ok {
						unresolved = append(unresolved, fmt.Sprintf("%s (%s): cannot evaluate its value", n.Name, f.pos(n)))
						continue
					}
					out.add(v, f.pos(n))
				}
			}
		}
	}
	return out, unresolved
}

// conditionReasons returns the condition reasons the code declares: the constants of
// type ConditionReason (Crossplane's xpv2.ConditionReason, or a package's own), and the
// untyped Reason* constants of the packages that set conditions with the function SDK,
// which takes a reason as a string.
func (s *source) conditionReasons() (decls, []string) {
	out, unresolved := s.typedConsts(func(f *sourceFile, t ast.Expr) bool {
		switch x := t.(type) {
		case *ast.Ident:
			return x.Name == "ConditionReason"
		case *ast.SelectorExpr:
			return x.Sel.Name == "ConditionReason"
		}
		return false
	})
	fnDirs := map[string]bool{}
	for _, f := range s.files {
		for _, p := range f.imports {
			if p == importFnResponse {
				fnDirs[f.dir] = true
			}
		}
	}
	for _, f := range s.files {
		if !fnDirs[f.dir] {
			continue
		}
		for _, d := range f.file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if vs.Type != nil {
					continue
				}
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Reason") || i >= len(vs.Values) {
						continue
					}
					if v, ok := stringLit(vs.Values[i]); ok {
						out.add(v, f.pos(n))
					}
				}
			}
		}
	}
	return out, unresolved
}

// eventReasons returns the event reasons the code declares: the constants of type
// event.Reason, and the reasons given to event.Warning and event.Normal as they are.
func (s *source) eventReasons() (decls, []string) {
	out, unresolved := s.typedConsts(func(f *sourceFile, t ast.Expr) bool {
		return f.isSelector(t, importEvent, "Reason")
	})
	for _, f := range s.files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) == 0 {
				return true
			}
			if !f.isSelector(c.Fun, importEvent, "Warning") && !f.isSelector(c.Fun, importEvent, "Normal") {
				return true
			}
			v, ok := s.resolve(f, c.Args[0])
			if !ok {
				unresolved = append(unresolved, fmt.Sprintf("an event reason at %s: not a literal nor a constant", f.pos(c)))
				return true
			}
			out.add(v, f.pos(c))
			return true
		})
	}
	return out, unresolved
}

// metrics returns the Prometheus metrics the code defines, by full name, and the label
// names they take: the Namespace, Subsystem and Name of prometheus.*Opts literals joined as
// prometheus.BuildFQName does, with the labels of the New*Vec that takes them, and the
// names and labels of prometheus.NewDesc.
func (s *source) metrics() (names, labels decls, unresolved []string) {
	names, labels = decls{}, decls{}
	opts := map[string]bool{"CounterOpts": true, "GaugeOpts": true, "HistogramOpts": true, "SummaryOpts": true}
	for _, f := range s.files {
		// The Opts literals a New*Vec takes, so its labels are told apart.
		ast.Inspect(f.file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				se, ok := x.Type.(*ast.SelectorExpr)
				if !ok || !opts[se.Sel.Name] || !f.isSelector(se, importPrometheus, se.Sel.Name) {
					return true
				}
				var parts [3]string // namespace, subsystem, name
				for _, el := range x.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					k, ok := kv.Key.(*ast.Ident)
					if !ok {
						continue
					}
					i := map[string]int{"Namespace": 0, "Subsystem": 1, "Name": 2}
					idx, ok := i[k.Name]
					if !ok {
						continue
					}
					v, ok := s.resolve(f, kv.Value)
					if !ok {
						unresolved = append(unresolved, fmt.Sprintf("the %s of a metric at %s: not a literal nor a constant", k.Name, f.pos(kv)))
						continue
					}
					parts[idx] = v
				}
				if parts[2] == "" {
					unresolved = append(unresolved, fmt.Sprintf("a metric at %s: no Name", f.pos(x)))
					return true
				}
				names.add(fqName(parts[0], parts[1], parts[2]), f.pos(x))
			case *ast.CallExpr:
				se, ok := x.Fun.(*ast.SelectorExpr)
				if !ok || !f.isSelector(se, importPrometheus, se.Sel.Name) {
					return true
				}
				switch {
				case se.Sel.Name == "NewDesc" && len(x.Args) >= 3:
					v, ok := s.resolve(f, x.Args[0])
					if !ok {
						unresolved = append(unresolved, fmt.Sprintf("the name of a metric at %s: not a literal nor a constant", f.pos(x)))
						return true
					}
					names.add(v, f.pos(x))
					s.labelNames(f, x.Args[2], labels, &unresolved)
				case strings.HasPrefix(se.Sel.Name, "New") && strings.HasSuffix(se.Sel.Name, "Vec") && len(x.Args) >= 2:
					s.labelNames(f, x.Args[1], labels, &unresolved)
				}
			}
			return true
		})
	}
	return names, labels, unresolved
}

// labelNames adds the label names of e, a []string literal (or nil).
func (s *source) labelNames(f *sourceFile, e ast.Expr, labels decls, unresolved *[]string) {
	if id, ok := e.(*ast.Ident); ok && id.Name == "nil" {
		return
	}
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		*unresolved = append(*unresolved, fmt.Sprintf("the labels of a metric at %s: not a []string literal", f.pos(e)))
		return
	}
	for _, el := range cl.Elts {
		v, ok := s.resolve(f, el)
		if !ok {
			*unresolved = append(*unresolved, fmt.Sprintf("a label of a metric at %s: not a literal nor a constant", f.pos(el)))
			continue
		}
		labels.add(v, f.pos(el))
	}
}

// fqName joins the parts of a metric's name as prometheus.BuildFQName does.
func fqName(namespace, subsystem, name string) string {
	var parts []string
	for _, p := range []string{namespace, subsystem, name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "_")
}

// tableValues returns the string values of the composite literal assigned to the
// package-level variable name in the package at dir: a label's fixed set of values.
func (s *source) tableValues(dir, name string) decls {
	out := decls{}
	for _, f := range s.files {
		if f.dir != dir {
			continue
		}
		for _, d := range f.file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name != name || i >= len(vs.Values) {
						continue
					}
					cl, ok := vs.Values[i].(*ast.CompositeLit)
					if !ok {
						continue
					}
					for _, el := range cl.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							el = kv.Value
						}
						if v, ok := s.resolve(f, el); ok {
							out.add(v, f.pos(el))
						}
					}
				}
			}
		}
	}
	return out
}

// prefixedConsts returns the untyped string constants of the package at dir whose names
// start with prefix: a label's fixed set of values declared one constant each.
func (s *source) prefixedConsts(dir, prefix string) decls {
	out := decls{}
	for _, f := range s.files {
		if f.dir != dir {
			continue
		}
		for _, d := range f.file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, prefix) || i >= len(vs.Values) {
						continue
					}
					if v, ok := stringLit(vs.Values[i]); ok {
						out.add(v, f.pos(n))
					}
				}
			}
		}
	}
	return out
}

// kindArgs returns the kinds given as the first argument of the calls named fn, where a
// kind is a constant pkg.FooKind of the module's API packages, named Foo.
func (s *source) kindArgs(fns ...string) decls {
	want := map[string]bool{}
	for _, fn := range fns {
		want[fn] = true
	}
	out := decls{}
	for _, f := range s.files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) == 0 {
				return true
			}
			var name string
			switch fn := c.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if !want[name] {
				return true
			}
			se, ok := c.Args[0].(*ast.SelectorExpr)
			if !ok || !strings.HasSuffix(se.Sel.Name, "Kind") {
				return true
			}
			out.add(strings.TrimSuffix(se.Sel.Name, "Kind"), f.pos(c))
			return true
		})
	}
	// The pairs made at start, given as a table of {kind, reason}.
	for _, f := range s.files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			at, ok := cl.Type.(*ast.ArrayType)
			if !ok {
				return true
			}
			if _, ok := at.Elt.(*ast.ArrayType); !ok {
				return true
			}
			for _, el := range cl.Elts {
				row, ok := el.(*ast.CompositeLit)
				if !ok || len(row.Elts) == 0 {
					continue
				}
				if se, ok := row.Elts[0].(*ast.SelectorExpr); ok && strings.HasSuffix(se.Sel.Name, "Kind") {
					out.add(strings.TrimSuffix(se.Sel.Name, "Kind"), f.pos(row))
				}
			}
			return true
		})
	}
	return out
}
