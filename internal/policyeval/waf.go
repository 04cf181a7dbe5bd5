package policyeval

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"

	"github.com/armorplane/provider-cloudarmor/internal/wafset"
)

// crsVersion is the OWASP Core Rule Set release the embedded rules come
// from (github.com/corazawaf/coraza-coreruleset/v4 at the go.mod version).
const crsVersion = "4.22"

// maxSensitivity is the highest sensitivity (CRS paranoia level), and the
// one a WAF rule without a sensitivity runs at ("Tune preconfigured WAF
// rules": "By default, Cloud Armor is configured to run at sensitivity
// level 4").
const maxSensitivity = 4

// A wafFamily is where an attack family's signatures are in the CRS.
type wafFamily struct {
	// file is the CRS rule file, under @owasp_crs/.
	file string
	// block is the file's id block: signatures are block*1000+100 to
	// block*1000+999 (the lower ids are CRS's paranoia-level switches).
	block int
	// only, when set, limits the set to these signatures.
	only []int
}

// wafFamilies maps Cloud Armor's attack families (internal/wafset) to the
// CRS files they are built from ("Preconfigured WAF rules overview").
// nodejs (CRS 3.3's REQUEST-934-APPLICATION-ATTACK-NODEJS) became part of
// CRS 4's generic attacks, 934.
var wafFamilies = map[string]wafFamily{
	"methodenforcement": {file: "REQUEST-911-METHOD-ENFORCEMENT.conf", block: 911},
	"scannerdetection":  {file: "REQUEST-913-SCANNER-DETECTION.conf", block: 913},
	"protocolattack":    {file: "REQUEST-921-PROTOCOL-ATTACK.conf", block: 921},
	"lfi":               {file: "REQUEST-930-APPLICATION-ATTACK-LFI.conf", block: 930},
	"rfi":               {file: "REQUEST-931-APPLICATION-ATTACK-RFI.conf", block: 931},
	"rce":               {file: "REQUEST-932-APPLICATION-ATTACK-RCE.conf", block: 932},
	"php":               {file: "REQUEST-933-APPLICATION-ATTACK-PHP.conf", block: 933},
	"nodejs":            {file: "REQUEST-934-APPLICATION-ATTACK-GENERIC.conf", block: 934},
	"generic":           {file: "REQUEST-934-APPLICATION-ATTACK-GENERIC.conf", block: 934},
	"xss":               {file: "REQUEST-941-APPLICATION-ATTACK-XSS.conf", block: 941},
	"sqli":              {file: "REQUEST-942-APPLICATION-ATTACK-SQLI.conf", block: 942},
	"sessionfixation":   {file: "REQUEST-943-APPLICATION-ATTACK-SESSION-FIXATION.conf", block: 943},
	"java":              {file: "REQUEST-944-APPLICATION-ATTACK-JAVA.conf", block: 944},
}

// jsonSQLi is json-sqli-canary: the CRS's JSON-based SQL injection
// signature alone.
var jsonSQLi = wafFamily{file: "REQUEST-942-APPLICATION-ATTACK-SQLI.conf", block: 942, only: []int{942550}}

// resolveSet returns the CRS family of a set name, and whether its
// signatures are those of another CRS version than crsVersion.
func resolveSet(name string) (f wafFamily, otherVersion string, ok bool) {
	if name == "json-sqli-canary" {
		return jsonSQLi, "", true
	}
	s, ok := wafset.Parse(name)
	if !ok {
		return wafFamily{}, "", false
	}
	f, ok = wafFamilies[s.Family]
	switch s.Version {
	case wafset.VersionCRS33:
		otherVersion = "3.3"
	case wafset.VersionCRS30:
		otherVersion = "3.0"
	}
	return f, otherVersion, ok
}

// has says whether id is one of the family's signatures.
func (f wafFamily) has(id int) bool {
	if f.only != nil {
		return slices.Contains(f.only, id)
	}
	return id/1000 == f.block && id%1000 >= 100
}

// A wafEngine is one CRS file compiled with Coraza, at paranoia level 4:
// every signature runs, and a request's matches are filtered by
// sensitivity afterwards, so one engine serves every sensitivity and
// opt-in/opt-out list of its sets. Compiling is the expensive part, done
// once per file and only when a policy first uses it.
type wafEngine struct {
	once sync.Once
	waf  coraza.WAF
	ids  map[int]bool // rule ids of the file, for warnings on unknown ids
	err  error
}

var wafEngines = func() map[string]*wafEngine {
	m := map[string]*wafEngine{}
	for _, f := range wafFamilies {
		m[f.file] = &wafEngine{}
	}
	return m
}()

// wafDirectives loads one CRS file in detection mode. 901 initialises the
// variables the rules read (allowed methods, restricted headers); 949, the
// anomaly-score verdict, is left out: Cloud Armor's sets match when any
// signature matches, not on a score.
const wafDirectives = `SecRuleEngine DetectionOnly
SecRequestBodyAccess Off
SecResponseBodyAccess Off
Include @crs-setup.conf.example
SecAction "id:900000,phase:1,pass,nolog,setvar:tx.blocking_paranoia_level=4"
SecAction "id:900001,phase:1,pass,nolog,setvar:tx.detection_paranoia_level=4"
Include @owasp_crs/REQUEST-901-INITIALIZATION.conf
Include @owasp_crs/%s
`

var ruleIDPattern = regexp.MustCompile(`\bid:(\d{6})\b`)

// engine returns the compiled engine of a CRS file.
func engine(file string) (*wafEngine, error) {
	e, ok := wafEngines[file]
	if !ok {
		return nil, fmt.Errorf("no CRS rule file %s", file)
	}
	e.once.Do(func() {
		text, err := fs.ReadFile(coreruleset.FS, "@owasp_crs/"+file)
		if err != nil {
			e.err = fmt.Errorf("cannot read CRS rule file %s: %w", file, err)
			return
		}
		e.ids = map[int]bool{}
		for _, m := range ruleIDPattern.FindAllStringSubmatch(string(text), -1) {
			id, _ := strconv.Atoi(m[1])
			e.ids[id] = true
		}
		e.waf, err = coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(coreruleset.FS).
			WithDirectives(fmt.Sprintf(wafDirectives, file)))
		if err != nil {
			e.err = fmt.Errorf("cannot compile CRS rule file %s: %w", file, err)
		}
	})
	return e, e.err
}

// A wafHit is a CRS rule that matched a request.
type wafHit struct {
	id        int
	paranoia  int
	msg       string
	variables []wafField // the request fields it matched, TX and the like left out
}

// A wafField is a request field a signature inspected: ARGS_GET:q,
// REQUEST_HEADERS:user-agent, REQUEST_FILENAME.
type wafField struct {
	variable, key string
}

func (f wafField) String() string {
	if f.key == "" {
		return f.variable
	}
	return f.variable + ":" + f.key
}

// run evaluates the request against a compiled CRS file and returns the
// signatures that matched (rules with a paranoia level; CRS's helper rules
// have none).
func (e *wafEngine) run(r wafRequest) []wafHit {
	tx := e.waf.NewTransaction()
	defer tx.Close()
	tx.ProcessConnection(r.ip, 0, "", 0)
	tx.ProcessURI(r.uri, r.method, "HTTP/1.1")
	for _, h := range r.headers {
		tx.AddRequestHeader(h[0], h[1])
	}
	tx.ProcessRequestHeaders()
	// No body: phase 2, where most signatures run, still runs.
	_, _ = tx.ProcessRequestBody()
	var hits []wafHit
	for _, m := range tx.MatchedRules() {
		pl := paranoiaLevel(m.Rule().Tags())
		if pl == 0 {
			continue
		}
		h := wafHit{id: m.Rule().ID(), paranoia: pl, msg: m.Message()}
		for _, d := range m.MatchedDatas() {
			// TX and MATCHED_VARS are the rule's own state, not the request.
			if v := d.Variable().Name(); v != "TX" && v != "" && !strings.HasPrefix(v, "MATCHED_VAR") {
				h.variables = append(h.variables, wafField{variable: v, key: d.Key()})
			}
		}
		hits = append(hits, h)
	}
	return hits
}

// paranoiaLevel reads a rule's paranoia-level/N tag; 0 without one.
func paranoiaLevel(tags []string) int {
	for _, t := range tags {
		if s, ok := strings.CutPrefix(t, "paranoia-level/"); ok {
			if n, err := strconv.Atoi(s); err == nil {
				return n
			}
		}
	}
	return 0
}
