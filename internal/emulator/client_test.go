package emulator

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
)

var fingerprintShape = regexp.MustCompile(`^[A-Za-z0-9+/]{11}=$`)

func TestPolicyLifecycle(t *testing.T) {
	scopes(t, Options{}, func(t *testing.T, em *Running, api policyAPI) {
		wait := waiter(t, api)
		op, err := api.Insert(&compute.SecurityPolicy{Name: "p1", Description: "d"})
		if err != nil {
			t.Fatal(err)
		}
		if op.Status != "RUNNING" || op.OperationType != "insert" || op.TargetLink != apiRoot+api.Path("p1") {
			t.Errorf("insert operation: got %+v", op)
		}
		wait(op, nil)
		p, err := api.Get("p1")
		if err != nil {
			t.Fatal(err)
		}
		checkServerFields(t, api, p)
		if strconv.FormatUint(p.Id, 10) != strconv.FormatUint(op.TargetId, 10) {
			t.Errorf("targetId %d is not the policy id %d", op.TargetId, p.Id)
		}
		want := []*compute.SecurityPolicyRule{{Kind: "compute#securityPolicyRule", Action: "allow",
			Description: "Default rule, higher priority overrides it", Priority: defaultPriority,
			Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1",
				Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"*"}}}}}
		if diff := cmp.Diff(want, p.Rules); diff != "" {
			t.Errorf("default rule: -want, +got:\n%s", diff)
		}

		wait(api.Patch("p1", &compute.SecurityPolicy{Description: "changed", Fingerprint: p.Fingerprint}))
		p2, _ := api.Get("p1")
		if p2.Description != "changed" || p2.Fingerprint == p.Fingerprint {
			t.Errorf("after patch: description %q, fingerprint %q (was %q)", p2.Description, p2.Fingerprint, p.Fingerprint)
		}

		wait(api.SetLabels("p1", map[string]string{"env": "test"}, p2.LabelFingerprint))
		p3, _ := api.Get("p1")
		if p3.Labels["env"] != "test" || p3.LabelFingerprint == emptyLabelFingerprint || p3.Fingerprint == p2.Fingerprint {
			t.Errorf("after setLabels: %+v", p3)
		}

		list, err := api.List()
		if err != nil || len(list.Items) != 1 || list.Items[0].Name != "p1" || list.Kind != "compute#securityPolicyList" {
			t.Errorf("list: %+v, %v", list, err)
		}

		op = wait(api.Delete("p1"))
		if op.OperationType != "delete" || op.EndTime == "" || op.Progress != 100 {
			t.Errorf("delete operation: %+v", op)
		}
		if _, err := api.Get("p1"); asAPIErr(err) == nil || asAPIErr(err).Code != 404 {
			t.Errorf("get after delete: want 404, got %v", err)
		}
	})
}

func checkServerFields(t *testing.T, api policyAPI, p *compute.SecurityPolicy) {
	t.Helper()
	if p.Kind != "compute#securityPolicy" || p.Type != "CLOUD_ARMOR" || p.SelfLink != apiRoot+api.Path(p.Name) {
		t.Errorf("kind/type/selfLink: %q %q %q", p.Kind, p.Type, p.SelfLink)
	}
	if len(strconv.FormatUint(p.Id, 10)) != 19 {
		t.Errorf("id %d is not 19 digits", p.Id)
	}
	if !fingerprintShape.MatchString(p.Fingerprint) || p.LabelFingerprint != emptyLabelFingerprint {
		t.Errorf("fingerprints: %q %q", p.Fingerprint, p.LabelFingerprint)
	}
	if _, ok := api.(regionalAPI); ok && p.Region != apiRoot+"projects/"+project+"/regions/"+region {
		t.Errorf("region: %q", p.Region)
	}
	if p.CreationTimestamp == "" {
		t.Error("no creationTimestamp")
	}
}

func TestRules(t *testing.T) {
	scopes(t, Options{}, func(t *testing.T, em *Running, api policyAPI) {
		wait := waiter(t, api)
		wait(api.Insert(policyWith("p", ipRule(1000, "allow", "10.0.0.0/8"))))
		steps := []struct {
			op   string
			call func() (*compute.Operation, error)
		}{
			{"AddRule", func() (*compute.Operation, error) { return api.AddRule("p", ipRule(555, "allow", "1.2.3.4/32")) }},
			{"AddRule", func() (*compute.Operation, error) { return api.AddRule("p", ipRule(0, "deny(404)", "5.6.7.8")) }},
			{"PatchRule", func() (*compute.Operation, error) {
				return api.PatchRule("p", defaultPriority, "", ipRule(defaultPriority, "allow", "*"))
			}},
			{"PatchRule", func() (*compute.Operation, error) {
				return api.PatchRule("p", 555, "", &compute.SecurityPolicyRule{Action: "deny(502)",
					Description: "x", Match: ipRule(0, "", "9.9.9.0/24").Match})
			}},
			{"RemoveRule", func() (*compute.Operation, error) { return api.RemoveRule("p", 1000) }},
		}
		for _, s := range steps {
			if op := wait(s.call()); op.OperationType != s.op {
				t.Errorf("operationType: want %s, got %s", s.op, op.OperationType)
			}
		}
		p, _ := api.Get("p")
		var got []string
		for _, r := range p.Rules {
			got = append(got, strconv.FormatInt(r.Priority, 10)+" "+r.Action+" "+r.Description)
		}
		want := []string{"0 deny(404) ", "2147483647 allow ", "555 deny(502) x"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("rules (ordered as text): -want, +got:\n%s", diff)
		}
		r, err := api.GetRule("p", 555)
		if err != nil || r.Kind != "compute#securityPolicyRule" || r.Match.Config.SrcIpRanges[0] != "9.9.9.0/24" {
			t.Errorf("getRule: %+v, %v", r, err)
		}
	})
}

func TestErrors(t *testing.T) {
	type args struct {
		call func(api policyAPI) error
	}
	cases := map[string]struct {
		reason string
		args   args
		want   func(api policyAPI) *apiErr
	}{
		"GetMissingPolicy": {
			reason: "A missing policy is a 404 with the recorded message.",
			args:   args{call: func(api policyAPI) error { _, err := api.Get("nope"); return err }},
			want: func(api policyAPI) *apiErr {
				return &apiErr{404, "notFound", "The resource '" + api.Path("nope") + "' was not found"}
			},
		},
		"InsertExisting": {
			reason: "Inserting an existing name is a 409.",
			args:   args{call: func(api policyAPI) error { _, err := api.Insert(policyWith("p")); return err }},
			want: func(api policyAPI) *apiErr {
				return &apiErr{409, "alreadyExists", "The resource '" + api.Path("p") + "' already exists"}
			},
		},
		"AddDuplicatePriority": {
			reason: "Two rules cannot share a priority.",
			args:   args{call: func(api policyAPI) error { _, err := api.AddRule("p", ipRule(100, "allow", "1.1.1.1")); return err }},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'resource.priority': '100'. Cannot have rules with the same priorities."}
			},
		},
		"PatchMissingRule": {
			reason: "patchRule on a missing priority is a 400, not a 404.",
			args: args{call: func(api policyAPI) error {
				_, err := api.PatchRule("p", 7, "", ipRule(7, "allow", "*"))
				return err
			}},
			want: func(policyAPI) *apiErr { return noRule(7) },
		},
		"GetMissingRule": {
			reason: "getRule on a missing priority is the same 400.",
			args:   args{call: func(api policyAPI) error { _, err := api.GetRule("p", 8); return err }},
			want:   func(policyAPI) *apiErr { return noRule(8) },
		},
		"RemoveMissingRule": {
			reason: "removeRule on a missing priority is the same 400.",
			args:   args{call: func(api policyAPI) error { _, err := api.RemoveRule("p", 9); return err }},
			want:   func(policyAPI) *apiErr { return noRule(9) },
		},
		"RemoveDefaultRule": {
			reason: "The default rule cannot be removed.",
			args:   args{call: func(api policyAPI) error { _, err := api.RemoveRule("p", defaultPriority); return err }},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'priority': '2147483647'. The default rule cannot be removed."}
			},
		},
		"StaleFingerprint": {
			reason: "PATCH with a stale fingerprint is 412 conditionNotMet.",
			args: args{call: func(api policyAPI) error {
				_, err := api.Patch("p", &compute.SecurityPolicy{Description: "x", Fingerprint: "AAAAAAAAAAA="})
				return err
			}},
			want: func(policyAPI) *apiErr {
				return &apiErr{412, "conditionNotMet", "Supplied fingerprint does not match current metadata fingerprint."}
			},
		},
		"StaleLabelFingerprint": {
			reason: "setLabels with a stale labelFingerprint is 412 conditionNotMet.",
			args: args{call: func(api policyAPI) error {
				_, err := api.SetLabels("p", map[string]string{"a": "b"}, "AAAAAAAAAAA=")
				return err
			}},
			want: func(policyAPI) *apiErr {
				return &apiErr{412, "conditionNotMet", "Labels fingerprint either invalid or resource labels have changed"}
			},
		},
		"TypeImmutable": {
			reason: "type can only be set at creation.",
			args: args{call: func(api policyAPI) error {
				_, err := api.Patch("p", &compute.SecurityPolicy{Type: "CLOUD_ARMOR_EDGE"})
				return err
			}},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'resource.type': 'CLOUD_ARMOR_EDGE'. The type of a security policy can only be set at creation time."}
			},
		},
		"TooManyRanges": {
			reason: "At most 10 srcIpRanges per rule.",
			args: args{call: func(api policyAPI) error {
				r := ipRule(5, "allow", "1.0.0.0/8", "2.0.0.0/8", "3.0.0.0/8", "4.0.0.0/8", "5.0.0.0/8", "6.0.0.0/8",
					"7.0.0.0/8", "8.0.0.0/8", "9.0.0.0/8", "10.0.0.0/8", "11.0.0.0/8")
				_, err := api.AddRule("p", r)
				return err
			}},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'resource.match.config.srcIpRanges': '11'. Maximum number of src_ip_ranges allowed is 10."}
			},
		},
		"BadCIDR": {
			reason: "Each range must be an IP, a CIDR or *.",
			args:   args{call: func(api policyAPI) error { _, err := api.AddRule("p", ipRule(5, "allow", "10.0.0.0/33")); return err }},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'resource.match.config.srcIpRanges[0]': '10.0.0.0/33'. Must be a valid IPv4 or IPv6 address or CIDR range."}
			},
		},
		"PriorityOutOfRange": {
			reason: "Priorities are 0..2147483647.",
			args:   args{call: func(api policyAPI) error { _, err := api.AddRule("p", ipRule(-1, "allow", "*")); return err }},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'resource.priority': '-1'. Must be between 0 and 2147483647."}
			},
		},
		"BadAction": {
			reason: "The action must be one of the enum values.",
			args:   args{call: func(api policyAPI) error { _, err := api.AddRule("p", ipRule(5, "block", "*")); return err }},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'resource.action': 'block'. Must be one of [allow, deny(403), deny(404), deny(429), deny(502), fairshare, rate_based_ban, redirect, throttle]."}
			},
		},
		"RateLimitOnAllow": {
			reason: "rateLimitOptions only go with throttle, rate_based_ban and fairshare.",
			args: args{call: func(api policyAPI) error {
				r := ipRule(5, "allow", "*")
				r.RateLimitOptions = &compute.SecurityPolicyRuleRateLimitOptions{ConformAction: "allow"}
				_, err := api.AddRule("p", r)
				return err
			}},
			want: func(policyAPI) *apiErr { return rateLimitErr() },
		},
		"ThrottleWithoutRateLimit": {
			reason: "throttle needs rateLimitOptions.",
			args:   args{call: func(api policyAPI) error { _, err := api.AddRule("p", ipRule(5, "throttle", "*")); return err }},
			want:   func(policyAPI) *apiErr { return rateLimitErr() },
		},
		"EnforceOnKeyAndConfigs": {
			reason: "enforceOnKey and enforceOnKeyConfigs are mutually exclusive.",
			args: args{call: func(api policyAPI) error {
				r := ipRule(5, "throttle", "*")
				r.RateLimitOptions = &compute.SecurityPolicyRuleRateLimitOptions{ConformAction: "allow", ExceedAction: "deny(429)",
					EnforceOnKey: "IP", EnforceOnKeyConfigs: []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{{EnforceOnKeyType: "IP"}}}
				_, err := api.AddRule("p", r)
				return err
			}},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'resource.rateLimitOptions.enforceOnKeyConfigs': ''. enforceOnKey and enforceOnKeyConfigs cannot be specified together."}
			},
		},
		"BadName": {
			reason: "Policy names follow the compute name pattern.",
			args:   args{call: func(api policyAPI) error { _, err := api.Insert(policyWith("Bad_Name")); return err }},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'resource.name': 'Bad_Name'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"}
			},
		},
		"MissingDefaultRule": {
			reason: "A policy given rules must include the default rule (chosen message).",
			args: args{call: func(api policyAPI) error {
				_, err := api.Insert(&compute.SecurityPolicy{Name: "q", Rules: []*compute.SecurityPolicyRule{ipRule(5, "allow", "*")}})
				return err
			}},
			want: func(policyAPI) *apiErr {
				return &apiErr{400, "invalid", "Invalid value for field 'resource.rules': ''. Every security policy must have a default rule at priority 2147483647 with match condition *."}
			},
		},
	}
	scopes(t, Options{}, func(t *testing.T, em *Running, api policyAPI) {
		wait := waiter(t, api)
		wait(api.Insert(policyWith("p", ipRule(100, "allow", "1.1.1.1"))))
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				if diff := cmp.Diff(tc.want(api), asAPIErr(tc.args.call(api))); diff != "" {
					t.Errorf("\n%s\ncall(...): -want, +got:\n%s", tc.reason, diff)
				}
			})
		}
	})
}

func noRule(p int) *apiErr {
	n := strconv.Itoa(p)
	return &apiErr{400, "invalid", "Invalid value for field 'priority': '" + n + "'. The security policy does not contain a rule at priority " + n + "."}
}

func rateLimitErr() *apiErr {
	return &apiErr{400, "invalid", "Invalid value for field 'resource.rateLimitOptions': ''. Rate limit options must be specified if the action is 'fairshare', 'rate_based_ban' or 'throttle'. It cannot be specified for any other actions"}
}

func TestQuota(t *testing.T) {
	cases := map[string]struct {
		reason string
		quota  Quota
		call   func(api policyAPI) (*compute.Operation, error)
		want   *compute.OperationErrorErrors
	}{
		"Rules": {
			reason: "Exceeding the rule quota fails the operation, not the call.",
			quota:  Quota{Rules: 2},
			call:   func(api policyAPI) (*compute.Operation, error) { return api.AddRule("p", ipRule(5, "allow", "*")) },
			want:   &compute.OperationErrorErrors{Code: "QUOTA_EXCEEDED", Message: "Quota 'SECURITY_POLICY_RULES' exceeded.  Limit: 2.0 globally."},
		},
		"Policies": {
			reason: "Exceeding the policy quota fails the insert operation.",
			quota:  Quota{Policies: 1},
			call:   func(api policyAPI) (*compute.Operation, error) { return api.Insert(policyWith("q")) },
			want:   &compute.OperationErrorErrors{Code: "QUOTA_EXCEEDED", Message: "Quota 'SECURITY_POLICIES' exceeded.  Limit: 1.0 globally."},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scopes(t, Options{Faults: Faults{Quota: tc.quota}}, func(t *testing.T, em *Running, api policyAPI) {
				wait := waiter(t, api)
				wait(api.Insert(policyWith("p", ipRule(1, "allow", "*"))))
				op, err := tc.call(api)
				if err != nil {
					t.Fatal(err)
				}
				op, err = api.GetOp(op.Name)
				if err != nil || op.Status != "DONE" || op.Error == nil || len(op.Error.Errors) != 1 {
					t.Fatalf("\n%s\nwant DONE with one error, got %+v, %v", tc.reason, op, err)
				}
				if diff := cmp.Diff(tc.want, op.Error.Errors[0]); diff != "" {
					t.Errorf("\n%s\noperation error: -want, +got:\n%s", tc.reason, diff)
				}
				p, _ := api.Get("p")
				if len(p.Rules) != 2 {
					t.Errorf("a failed operation must not change the policy: %d rules", len(p.Rules))
				}
			})
		})
	}
}
