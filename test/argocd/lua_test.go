// Package argocd tests what Argo CD sees of the provider: the health check in
// docs/argocd/health.lua, run with gopher-lua (the VM Argo CD embeds) against
// objects a running provider wrote, the argocd-cm snippet in docs/gitops.md
// that carries it, and that re-applying examples with server-side apply
// changes nothing (an Application stays Synced).
package argocd

import (
	"fmt"
	"os"
	"path/filepath"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

func repoRoot() string { return repo.Root() }

// healthScript is the single source of the health check.
func healthScript() (string, error) {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "argocd", "health.lua"))
	return string(b), err
}

// health is Argo CD's verdict on an object.
type health struct {
	Status  string
	Message string
}

// evalHealth runs script the way Argo CD does: obj set as a global holding the
// object's JSON, the script's return value read as {status, message}, with
// the libraries Argo CD opens.
func evalHealth(script string, obj *unstructured.Unstructured) (health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		l.Push(l.NewFunction(lib.fn))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	l.SetGlobal("obj", toLua(l, obj.Object))
	if err := l.DoString(script); err != nil {
		return health{}, err
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("health script returned %s, want a table", l.Get(-1).Type())
	}
	return health{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}, nil
}

// toLua converts decoded JSON to Lua values as Argo CD's JSON decoder does:
// objects and arrays become tables (arrays 1-based), numbers LNumber.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := l.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(l, e))
		}
		return t
	case []any:
		t := l.NewTable()
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	default:
		return lua.LNil
	}
}
