package verdict

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

var (
	roles     = []Role{Owner, Adopter, Observer, Outranked, Borrower}
	presences = []Presence{Unread, Missing, Present, Permanent, NoParent}
)

func TestDecide(t *testing.T) {
	type args struct {
		f Facts
	}
	cases := map[string]struct {
		reason string
		args   args
		want   Verdict
	}{
		"OwnerUnread":                      {reason: "Nothing read, and the role does not decide alone: GCP must be read.", args: args{f: Facts{Role: Owner, Presence: Unread, Deleting: false}}, want: Undecided},
		"OwnerUnreadDeleting":              {reason: "Nothing read, and the role does not decide alone: GCP must be read.", args: args{f: Facts{Role: Owner, Presence: Unread, Deleting: true}}, want: Undecided},
		"OwnerMissing":                     {reason: "GCP has nothing: Create makes it, for an object that creates.", args: args{f: Facts{Role: Owner, Presence: Missing, Deleting: false}}, want: Absent},
		"OwnerMissingDeleting":             {reason: "GCP has nothing: nothing to delete.", args: args{f: Facts{Role: Owner, Presence: Missing, Deleting: true}}, want: Absent},
		"OwnerPresent":                     {reason: "Present and owned: Update when it differs.", args: args{f: Facts{Role: Owner, Presence: Present, Deleting: false}}, want: Own},
		"OwnerPresentDeleting":             {reason: "Present and being deleted: Delete runs, as the management policies allow.", args: args{f: Facts{Role: Owner, Presence: Present, Deleting: true}}, want: Delete},
		"OwnerPermanent":                   {reason: "Present and owned: Update when it differs. Permanent matters only when deleting.", args: args{f: Facts{Role: Owner, Presence: Permanent, Deleting: false}}, want: Own},
		"OwnerPermanentDeleting":           {reason: "Deleting leaves a permanent resource as it is: nothing to undo.", args: args{f: Facts{Role: Owner, Presence: Permanent, Deleting: true}}, want: Released},
		"OwnerNoParent":                    {reason: "The parent is not there yet: wait, without creating.", args: args{f: Facts{Role: Owner, Presence: NoParent, Deleting: false}}, want: Waiting},
		"OwnerNoParentDeleting":            {reason: "No parent, so nothing in GCP to remove.", args: args{f: Facts{Role: Owner, Presence: NoParent, Deleting: true}}, want: Absent},
		"AdopterUnread":                    {reason: "Nothing read, and the role does not decide alone: GCP must be read.", args: args{f: Facts{Role: Adopter, Presence: Unread, Deleting: false}}, want: Undecided},
		"AdopterUnreadDeleting":            {reason: "Nothing read, and the role does not decide alone: GCP must be read.", args: args{f: Facts{Role: Adopter, Presence: Unread, Deleting: true}}, want: Undecided},
		"AdopterMissing":                   {reason: "GCP has nothing: Create makes it, for an object that creates.", args: args{f: Facts{Role: Adopter, Presence: Missing, Deleting: false}}, want: Absent},
		"AdopterMissingDeleting":           {reason: "GCP has nothing: nothing to delete.", args: args{f: Facts{Role: Adopter, Presence: Missing, Deleting: true}}, want: Absent},
		"AdopterPresent":                   {reason: "Present without an owner label: taken over by Update.", args: args{f: Facts{Role: Adopter, Presence: Present, Deleting: false}}, want: Adopt},
		"AdopterPresentDeleting":           {reason: "Present and being deleted: Delete runs, as the management policies allow.", args: args{f: Facts{Role: Adopter, Presence: Present, Deleting: true}}, want: Delete},
		"AdopterPermanent":                 {reason: "Present without an owner label: taken over by Update. Permanent matters only when deleting.", args: args{f: Facts{Role: Adopter, Presence: Permanent, Deleting: false}}, want: Adopt},
		"AdopterPermanentDeleting":         {reason: "Deleting leaves a permanent resource as it is: nothing to undo.", args: args{f: Facts{Role: Adopter, Presence: Permanent, Deleting: true}}, want: Released},
		"AdopterNoParent":                  {reason: "The parent is not there yet: wait, without creating.", args: args{f: Facts{Role: Adopter, Presence: NoParent, Deleting: false}}, want: Waiting},
		"AdopterNoParentDeleting":          {reason: "No parent, so nothing in GCP to remove.", args: args{f: Facts{Role: Adopter, Presence: NoParent, Deleting: true}}, want: Absent},
		"ObserverUnread":                   {reason: "Nothing read, and the role does not decide alone: GCP must be read.", args: args{f: Facts{Role: Observer, Presence: Unread, Deleting: false}}, want: Undecided},
		"ObserverUnreadDeleting":           {reason: "Nothing read, and the role does not decide alone: GCP must be read.", args: args{f: Facts{Role: Observer, Presence: Unread, Deleting: true}}, want: Undecided},
		"ObserverMissing":                  {reason: "GCP has nothing: Create makes it, for an object that creates.", args: args{f: Facts{Role: Observer, Presence: Missing, Deleting: false}}, want: Absent},
		"ObserverMissingDeleting":          {reason: "GCP has nothing: nothing to delete.", args: args{f: Facts{Role: Observer, Presence: Missing, Deleting: true}}, want: Absent},
		"ObserverPresent":                  {reason: "Present and only read.", args: args{f: Facts{Role: Observer, Presence: Present, Deleting: false}}, want: ObserveOnly},
		"ObserverPresentDeleting":          {reason: "Never reached: the reconciler drops an observer's finalizer without observing it. Reported as it exists, so Delete would still be the management policies' to allow.", args: args{f: Facts{Role: Observer, Presence: Present, Deleting: true}}, want: Delete},
		"ObserverPermanent":                {reason: "Present and only read. Permanent matters only when deleting.", args: args{f: Facts{Role: Observer, Presence: Permanent, Deleting: false}}, want: ObserveOnly},
		"ObserverPermanentDeleting":        {reason: "Deleting leaves a permanent resource as it is: nothing to undo.", args: args{f: Facts{Role: Observer, Presence: Permanent, Deleting: true}}, want: Released},
		"ObserverNoParent":                 {reason: "The parent is not there yet: wait, without creating.", args: args{f: Facts{Role: Observer, Presence: NoParent, Deleting: false}}, want: Waiting},
		"ObserverNoParentDeleting":         {reason: "No parent, so nothing in GCP to remove.", args: args{f: Facts{Role: Observer, Presence: NoParent, Deleting: true}}, want: Absent},
		"OutrankedUnread":                  {reason: "Another object owns it: this one writes nothing.", args: args{f: Facts{Role: Outranked, Presence: Unread, Deleting: false}}, want: Refused},
		"OutrankedUnreadDeleting":          {reason: "Another object owns it: deleting this one leaves GCP as it is.", args: args{f: Facts{Role: Outranked, Presence: Unread, Deleting: true}}, want: Released},
		"OutrankedMissing":                 {reason: "Another object owns it: this one writes nothing.", args: args{f: Facts{Role: Outranked, Presence: Missing, Deleting: false}}, want: Refused},
		"OutrankedMissingDeleting":         {reason: "Another object owns it: deleting this one leaves GCP as it is.", args: args{f: Facts{Role: Outranked, Presence: Missing, Deleting: true}}, want: Released},
		"OutrankedPresent":                 {reason: "Another object owns it: this one writes nothing.", args: args{f: Facts{Role: Outranked, Presence: Present, Deleting: false}}, want: Refused},
		"OutrankedPresentDeleting":         {reason: "Another object owns it: deleting this one leaves GCP as it is.", args: args{f: Facts{Role: Outranked, Presence: Present, Deleting: true}}, want: Released},
		"OutrankedPermanent":               {reason: "Another object owns it: this one writes nothing.", args: args{f: Facts{Role: Outranked, Presence: Permanent, Deleting: false}}, want: Refused},
		"OutrankedPermanentDeleting":       {reason: "Another object owns it: deleting this one leaves GCP as it is.", args: args{f: Facts{Role: Outranked, Presence: Permanent, Deleting: true}}, want: Released},
		"OutrankedNoParent":                {reason: "Another object owns it: this one writes nothing.", args: args{f: Facts{Role: Outranked, Presence: NoParent, Deleting: false}}, want: Refused},
		"OutrankedNoParentDeleting":        {reason: "Another object owns it: deleting this one leaves GCP as it is.", args: args{f: Facts{Role: Outranked, Presence: NoParent, Deleting: true}}, want: Released},
		"BorrowerUnread":                   {reason: "Nothing read, and the role does not decide alone: GCP must be read.", args: args{f: Facts{Role: Borrower, Presence: Unread, Deleting: false}}, want: Undecided},
		"BorrowerUnreadDeleting":           {reason: "Deleting a borrower hands its rule back to the policy's inline rules, whatever GCP holds.", args: args{f: Facts{Role: Borrower, Presence: Unread, Deleting: true}}, want: Released},
		"BorrowerMissing":                  {reason: "GCP has nothing: Create makes it, for an object that creates.", args: args{f: Facts{Role: Borrower, Presence: Missing, Deleting: false}}, want: Absent},
		"BorrowerMissingDeleting":          {reason: "Deleting a borrower hands its rule back to the policy's inline rules, whatever GCP holds.", args: args{f: Facts{Role: Borrower, Presence: Missing, Deleting: true}}, want: Released},
		"BorrowerPresent":                  {reason: "While it lives, a borrower owns its rule like any owner.", args: args{f: Facts{Role: Borrower, Presence: Present, Deleting: false}}, want: Own},
		"BorrowerPresentDeleting":          {reason: "Deleting a borrower hands its rule back to the policy's inline rules, whatever GCP holds.", args: args{f: Facts{Role: Borrower, Presence: Present, Deleting: true}}, want: Released},
		"BorrowerPermanent":                {reason: "While it lives, a borrower owns its rule like any owner. Permanent matters only when deleting.", args: args{f: Facts{Role: Borrower, Presence: Permanent, Deleting: false}}, want: Own},
		"BorrowerPermanentDeleting":        {reason: "Deleting a borrower hands its rule back to the policy's inline rules, whatever GCP holds.", args: args{f: Facts{Role: Borrower, Presence: Permanent, Deleting: true}}, want: Released},
		"BorrowerNoParent":                 {reason: "The parent is not there yet: wait, without creating.", args: args{f: Facts{Role: Borrower, Presence: NoParent, Deleting: false}}, want: Waiting},
		"BorrowerNoParentDeleting":         {reason: "Deleting a borrower hands its rule back to the policy's inline rules, whatever GCP holds.", args: args{f: Facts{Role: Borrower, Presence: NoParent, Deleting: true}}, want: Released},
		"DryRunOwnerUnread":                {reason: "Nothing read: GCP must be read before a dry run knows what it would ask.", args: args{f: Facts{Role: Owner, Presence: Unread, Deleting: false, DryRun: true}}, want: Undecided},
		"DryRunOwnerUnreadDeleting":        {reason: "Nothing read: GCP must be read before a dry run knows what it would ask.", args: args{f: Facts{Role: Owner, Presence: Unread, Deleting: true, DryRun: true}}, want: Undecided},
		"DryRunOwnerMissing":               {reason: "GCP has nothing: Create would make it, so GCP is asked instead (insert or addRule with validateOnly).", args: args{f: Facts{Role: Owner, Presence: Missing, Deleting: false, DryRun: true}}, want: DryRun},
		"DryRunOwnerMissingDeleting":       {reason: "GCP has nothing: nothing to delete, and nothing is written.", args: args{f: Facts{Role: Owner, Presence: Missing, Deleting: true, DryRun: true}}, want: Absent},
		"DryRunOwnerPresent":               {reason: "Present: Update would write it, so GCP is asked instead; nothing is written.", args: args{f: Facts{Role: Owner, Presence: Present, Deleting: false, DryRun: true}}, want: DryRun},
		"DryRunOwnerPresentDeleting":       {reason: "A dry run never deletes: the resource stays in GCP as it is.", args: args{f: Facts{Role: Owner, Presence: Present, Deleting: true, DryRun: true}}, want: Released},
		"DryRunOwnerPermanent":             {reason: "Present: Update would write it, so GCP is asked instead; nothing is written.", args: args{f: Facts{Role: Owner, Presence: Permanent, Deleting: false, DryRun: true}}, want: DryRun},
		"DryRunOwnerPermanentDeleting":     {reason: "A dry run never deletes: the resource stays in GCP as it is.", args: args{f: Facts{Role: Owner, Presence: Permanent, Deleting: true, DryRun: true}}, want: Released},
		"DryRunOwnerNoParent":              {reason: "The parent is not there yet: nothing to ask about yet; wait, without creating.", args: args{f: Facts{Role: Owner, Presence: NoParent, Deleting: false, DryRun: true}}, want: Waiting},
		"DryRunOwnerNoParentDeleting":      {reason: "No parent, so nothing in GCP to remove.", args: args{f: Facts{Role: Owner, Presence: NoParent, Deleting: true, DryRun: true}}, want: Absent},
		"DryRunAdopterUnread":              {reason: "Nothing read: GCP must be read before a dry run knows what it would ask.", args: args{f: Facts{Role: Adopter, Presence: Unread, Deleting: false, DryRun: true}}, want: Undecided},
		"DryRunAdopterUnreadDeleting":      {reason: "Nothing read: GCP must be read before a dry run knows what it would ask.", args: args{f: Facts{Role: Adopter, Presence: Unread, Deleting: true, DryRun: true}}, want: Undecided},
		"DryRunAdopterMissing":             {reason: "GCP has nothing: Create would make it, so GCP is asked instead (insert or addRule with validateOnly).", args: args{f: Facts{Role: Adopter, Presence: Missing, Deleting: false, DryRun: true}}, want: DryRun},
		"DryRunAdopterMissingDeleting":     {reason: "GCP has nothing: nothing to delete, and nothing is written.", args: args{f: Facts{Role: Adopter, Presence: Missing, Deleting: true, DryRun: true}}, want: Absent},
		"DryRunAdopterPresent":             {reason: "Present: Update would write it (adopting it), so GCP is asked instead; nothing is written.", args: args{f: Facts{Role: Adopter, Presence: Present, Deleting: false, DryRun: true}}, want: DryRun},
		"DryRunAdopterPresentDeleting":     {reason: "A dry run never deletes: the resource stays in GCP as it is.", args: args{f: Facts{Role: Adopter, Presence: Present, Deleting: true, DryRun: true}}, want: Released},
		"DryRunAdopterPermanent":           {reason: "Present: Update would write it (adopting it), so GCP is asked instead; nothing is written.", args: args{f: Facts{Role: Adopter, Presence: Permanent, Deleting: false, DryRun: true}}, want: DryRun},
		"DryRunAdopterPermanentDeleting":   {reason: "A dry run never deletes: the resource stays in GCP as it is.", args: args{f: Facts{Role: Adopter, Presence: Permanent, Deleting: true, DryRun: true}}, want: Released},
		"DryRunAdopterNoParent":            {reason: "The parent is not there yet: nothing to ask about yet; wait, without creating.", args: args{f: Facts{Role: Adopter, Presence: NoParent, Deleting: false, DryRun: true}}, want: Waiting},
		"DryRunAdopterNoParentDeleting":    {reason: "No parent, so nothing in GCP to remove.", args: args{f: Facts{Role: Adopter, Presence: NoParent, Deleting: true, DryRun: true}}, want: Absent},
		"DryRunObserverUnread":             {reason: "An observer's dry run changes nothing: GCP must be read first.", args: args{f: Facts{Role: Observer, Presence: Unread, Deleting: false, DryRun: true}}, want: Undecided},
		"DryRunObserverUnreadDeleting":     {reason: "An observer's dry run changes nothing: GCP must be read first.", args: args{f: Facts{Role: Observer, Presence: Unread, Deleting: true, DryRun: true}}, want: Undecided},
		"DryRunObserverMissing":            {reason: "An observer writes nothing anyway: its dry run changes nothing.", args: args{f: Facts{Role: Observer, Presence: Missing, Deleting: false, DryRun: true}}, want: Absent},
		"DryRunObserverMissingDeleting":    {reason: "An observer writes nothing anyway: its dry run changes nothing.", args: args{f: Facts{Role: Observer, Presence: Missing, Deleting: true, DryRun: true}}, want: Absent},
		"DryRunObserverPresent":            {reason: "An observer writes nothing anyway: its dry run changes nothing.", args: args{f: Facts{Role: Observer, Presence: Present, Deleting: false, DryRun: true}}, want: ObserveOnly},
		"DryRunObserverPresentDeleting":    {reason: "An observer writes nothing anyway: its dry run changes nothing (never reached while deleting).", args: args{f: Facts{Role: Observer, Presence: Present, Deleting: true, DryRun: true}}, want: Delete},
		"DryRunObserverPermanent":          {reason: "An observer writes nothing anyway: its dry run changes nothing.", args: args{f: Facts{Role: Observer, Presence: Permanent, Deleting: false, DryRun: true}}, want: ObserveOnly},
		"DryRunObserverPermanentDeleting":  {reason: "An observer writes nothing anyway: its dry run changes nothing.", args: args{f: Facts{Role: Observer, Presence: Permanent, Deleting: true, DryRun: true}}, want: Released},
		"DryRunObserverNoParent":           {reason: "An observer writes nothing anyway: its dry run changes nothing.", args: args{f: Facts{Role: Observer, Presence: NoParent, Deleting: false, DryRun: true}}, want: Waiting},
		"DryRunObserverNoParentDeleting":   {reason: "An observer writes nothing anyway: its dry run changes nothing.", args: args{f: Facts{Role: Observer, Presence: NoParent, Deleting: true, DryRun: true}}, want: Absent},
		"DryRunOutrankedUnread":            {reason: "Another object owns it: refused in dry run as out of it.", args: args{f: Facts{Role: Outranked, Presence: Unread, Deleting: false, DryRun: true}}, want: Refused},
		"DryRunOutrankedUnreadDeleting":    {reason: "Another object owns it: deleting this one leaves GCP as it is, dry run or not.", args: args{f: Facts{Role: Outranked, Presence: Unread, Deleting: true, DryRun: true}}, want: Released},
		"DryRunOutrankedMissing":           {reason: "Another object owns it: refused in dry run as out of it.", args: args{f: Facts{Role: Outranked, Presence: Missing, Deleting: false, DryRun: true}}, want: Refused},
		"DryRunOutrankedMissingDeleting":   {reason: "Another object owns it: deleting this one leaves GCP as it is, dry run or not.", args: args{f: Facts{Role: Outranked, Presence: Missing, Deleting: true, DryRun: true}}, want: Released},
		"DryRunOutrankedPresent":           {reason: "Another object owns it: refused in dry run as out of it.", args: args{f: Facts{Role: Outranked, Presence: Present, Deleting: false, DryRun: true}}, want: Refused},
		"DryRunOutrankedPresentDeleting":   {reason: "Another object owns it: deleting this one leaves GCP as it is, dry run or not.", args: args{f: Facts{Role: Outranked, Presence: Present, Deleting: true, DryRun: true}}, want: Released},
		"DryRunOutrankedPermanent":         {reason: "Another object owns it: refused in dry run as out of it.", args: args{f: Facts{Role: Outranked, Presence: Permanent, Deleting: false, DryRun: true}}, want: Refused},
		"DryRunOutrankedPermanentDeleting": {reason: "Another object owns it: deleting this one leaves GCP as it is, dry run or not.", args: args{f: Facts{Role: Outranked, Presence: Permanent, Deleting: true, DryRun: true}}, want: Released},
		"DryRunOutrankedNoParent":          {reason: "Another object owns it: refused in dry run as out of it.", args: args{f: Facts{Role: Outranked, Presence: NoParent, Deleting: false, DryRun: true}}, want: Refused},
		"DryRunOutrankedNoParentDeleting":  {reason: "Another object owns it: deleting this one leaves GCP as it is, dry run or not.", args: args{f: Facts{Role: Outranked, Presence: NoParent, Deleting: true, DryRun: true}}, want: Released},
		"DryRunBorrowerUnread":             {reason: "Nothing read: GCP must be read before a dry run knows what it would ask.", args: args{f: Facts{Role: Borrower, Presence: Unread, Deleting: false, DryRun: true}}, want: Undecided},
		"DryRunBorrowerUnreadDeleting":     {reason: "Deleting a borrower hands its rule back, dry run or not: nothing is written.", args: args{f: Facts{Role: Borrower, Presence: Unread, Deleting: true, DryRun: true}}, want: Released},
		"DryRunBorrowerMissing":            {reason: "GCP has nothing: Create would make it, so GCP is asked instead (insert or addRule with validateOnly).", args: args{f: Facts{Role: Borrower, Presence: Missing, Deleting: false, DryRun: true}}, want: DryRun},
		"DryRunBorrowerMissingDeleting":    {reason: "Deleting a borrower hands its rule back, dry run or not: nothing is written.", args: args{f: Facts{Role: Borrower, Presence: Missing, Deleting: true, DryRun: true}}, want: Released},
		"DryRunBorrowerPresent":            {reason: "Present: Update would write it, so GCP is asked instead; nothing is written.", args: args{f: Facts{Role: Borrower, Presence: Present, Deleting: false, DryRun: true}}, want: DryRun},
		"DryRunBorrowerPresentDeleting":    {reason: "Deleting a borrower hands its rule back, dry run or not: nothing is written.", args: args{f: Facts{Role: Borrower, Presence: Present, Deleting: true, DryRun: true}}, want: Released},
		"DryRunBorrowerPermanent":          {reason: "Present: Update would write it, so GCP is asked instead; nothing is written.", args: args{f: Facts{Role: Borrower, Presence: Permanent, Deleting: false, DryRun: true}}, want: DryRun},
		"DryRunBorrowerPermanentDeleting":  {reason: "Deleting a borrower hands its rule back, dry run or not: nothing is written.", args: args{f: Facts{Role: Borrower, Presence: Permanent, Deleting: true, DryRun: true}}, want: Released},
		"DryRunBorrowerNoParent":           {reason: "The parent is not there yet: nothing to ask about yet; wait, without creating.", args: args{f: Facts{Role: Borrower, Presence: NoParent, Deleting: false, DryRun: true}}, want: Waiting},
		"DryRunBorrowerNoParentDeleting":   {reason: "Deleting a borrower hands its rule back, dry run or not: nothing is written.", args: args{f: Facts{Role: Borrower, Presence: NoParent, Deleting: true, DryRun: true}}, want: Released},
	}
	// Every combination has its case: a Role or Presence added later fails
	// here until its verdicts are written down.
	seen := map[Facts]bool{}
	for _, tc := range cases {
		seen[tc.args.f] = true
	}
	for _, r := range roles {
		for _, p := range presences {
			for _, d := range []bool{false, true} {
				for _, dry := range []bool{false, true} {
					if f := (Facts{Role: r, Presence: p, Deleting: d, DryRun: dry}); !seen[f] {
						t.Errorf("TestDecide has no case for %+v", f)
					}
				}
			}
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Decide(tc.args.f)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nDecide(%+v): -want, +got:\n%s", tc.reason, tc.args.f, diff)
			}
		})
	}
}

func TestObservation(t *testing.T) {
	errBoom := errors.New("boom")
	type args struct {
		v Verdict
		d Details
	}
	type want struct {
		o   managed.ExternalObservation
		err error
	}
	drift := Details{UpToDate: false, Diff: "-want +got"}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Absent": {
			reason: "Absent is reported gone: Create, or the finalizer removed.",
			args:   args{v: Absent, d: drift},
			want:   want{o: managed.ExternalObservation{ResourceExists: false}},
		},
		"Own": {
			reason: "Own reports the comparison, for Update.",
			args:   args{v: Own, d: drift},
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false, Diff: "-want +got"}},
		},
		"OwnUpToDate": {
			reason: "Own and up to date: nothing to write.",
			args:   args{v: Own, d: Details{UpToDate: true}},
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"Adopt": {
			reason: "Adopt reports the comparison, which the missing owner label makes drift.",
			args:   args{v: Adopt, d: drift},
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false, Diff: "-want +got"}},
		},
		"ObserveOnly": {
			reason: "ObserveOnly reports the comparison; the management policies keep the reconciler from writing.",
			args:   args{v: ObserveOnly, d: drift},
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false, Diff: "-want +got"}},
		},
		"ObserveOnlyImported": {
			reason: "ObserveOnly of an object whose external name Observe found asks the reconciler to save the object.",
			args:   args{v: ObserveOnly, d: Details{UpToDate: true, LateInitialized: true}},
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true}},
		},
		"DeleteDropsLateInit": {
			reason: "Delete never asks the reconciler to save the object: it is being deleted.",
			args:   args{v: Delete, d: Details{LateInitialized: true}},
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"Delete": {
			reason: "Delete reports the resource there, so the reconciler calls Delete; the comparison is dropped.",
			args:   args{v: Delete, d: drift},
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"Waiting": {
			reason: "Waiting is reported existing and up to date: no create, no error, no backoff.",
			args:   args{v: Waiting},
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"DryRun": {
			reason: "DryRun is reported existing and up to date whatever GCP holds: no create, no update, no error, no backoff.",
			args:   args{v: DryRun, d: drift},
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"Released": {
			reason: "Released is reported gone, so the finalizer goes without Delete.",
			args:   args{v: Released, d: Details{UpToDate: true}},
			want:   want{o: managed.ExternalObservation{ResourceExists: false}},
		},
		"Refused": {
			reason: "Refused is its reason, as an error.",
			args:   args{v: Refused, d: Details{Err: errBoom}},
			want:   want{err: errBoom},
		},
		"Failed": {
			reason: "Failed is its error.",
			args:   args{v: Failed, d: Details{Err: errBoom}},
			want:   want{err: errBoom},
		},
		"RefusedWithoutReason": {
			reason: "A refusal without its reason is still an error, never a resource reported gone.",
			args:   args{v: Refused},
			want:   want{err: errors.New("observe reached no verdict (Refused)")},
		},
		"FailedWithoutError": {
			reason: "A failure without its error is still an error.",
			args:   args{v: Failed},
			want:   want{err: errors.New("observe reached no verdict (Failed)")},
		},
		"Undecided": {
			reason: "An undecided Observe is an error, never an observation the reconciler would create or delete on.",
			args:   args{v: Undecided},
			want:   want{err: errors.New("observe reached no verdict (Undecided)")},
		},
		"Unknown": {
			reason: "A value outside the verdicts is an error.",
			args:   args{v: Verdict(99)},
			want:   want{err: errors.New("observe reached no verdict (Verdict(99))")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.args.v.Observation(tc.args.d)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\n%s.Observation(...): -want error, +got error:\n%s", tc.reason, tc.args.v, diff)
			}
			if diff := cmp.Diff(tc.want.o, got); diff != "" {
				t.Errorf("\n%s\n%s.Observation(...): -want, +got:\n%s", tc.reason, tc.args.v, diff)
			}
		})
	}
}

func TestRefuse(t *testing.T) {
	type args struct {
		f   Facts
		why string
	}
	type want struct {
		o   managed.ExternalObservation
		err error
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Living": {
			reason: "A refused object reports why, as an error, whatever GCP holds.",
			args:   args{f: Facts{Role: Owner, Presence: Present}, why: "owned by team-a/p"},
			want:   want{err: errors.New("owned by team-a/p")},
		},
		"Deleting": {
			reason: "Deleting a refused object reports the resource gone, so it stays in GCP.",
			args:   args{f: Facts{Role: Owner, Presence: Present, Deleting: true}, why: "owned by team-a/p"},
			want:   want{o: managed.ExternalObservation{ResourceExists: false}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Refuse(tc.args.f, tc.args.why)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nRefuse(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, got); diff != "" {
				t.Errorf("\n%s\nRefuse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestFactsOf(t *testing.T) {
	deleted := metav1.Unix(1700000000, 0)
	cases := map[string]struct {
		reason string
		mg     *v1beta1.SecurityPolicy
		want   Facts
	}{
		"Writes": {
			reason: "An object with the default management policies starts as the owner.",
			mg:     &v1beta1.SecurityPolicy{},
			want:   Facts{Role: Owner},
		},
		"ObserveOnly": {
			reason: "An object that only observes starts, and stays, an observer.",
			mg: func() *v1beta1.SecurityPolicy {
				p := &v1beta1.SecurityPolicy{}
				p.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
				return p
			}(),
			want: Facts{Role: Observer},
		},
		"Deleting": {
			reason: "An object with a deletion timestamp is deleting.",
			mg:     &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}},
			want:   Facts{Role: Owner, Deleting: true},
		},
		"DryRun": {
			reason: "An object that writes and carries the dry-run annotation set to true is in dry run.",
			mg:     &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1beta1.AnnotationDryRun: "true"}}},
			want:   Facts{Role: Owner, DryRun: true},
		},
		"DryRunNotTrue": {
			reason: "Any other value of the annotation is not a dry run: it is an opt-in.",
			mg:     &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1beta1.AnnotationDryRun: "false"}}},
			want:   Facts{Role: Owner},
		},
		"DryRunObserveOnly": {
			reason: "An object that only observes writes nothing: the annotation changes nothing for it.",
			mg: func() *v1beta1.SecurityPolicy {
				p := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1beta1.AnnotationDryRun: "true"}}}
				p.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
				return p
			}(),
			want: Facts{Role: Observer},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, FactsOf(tc.mg)); diff != "" {
				t.Errorf("\n%s\nFactsOf(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWrites(t *testing.T) {
	cases := map[string]struct {
		reason string
		mp     xpv2.ManagementPolicies
		want   bool
	}{
		"Nil": {
			reason: "Unset management policies default to [\"*\"], which writes.",
			want:   true,
		},
		"Empty": {
			reason: "Empty management policies default to [\"*\"], which writes.",
			mp:     xpv2.ManagementPolicies{},
			want:   true,
		},
		"ObserveOnly": {
			reason: "An Observe-only object writes nothing.",
			mp:     xpv2.ManagementPolicies{xpv2.ManagementActionObserve},
			want:   false,
		},
		"ObserveUpdate": {
			reason: "Update writes.",
			mp:     xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionUpdate},
			want:   true,
		},
		"ObserveCreate": {
			reason: "Create writes.",
			mp:     xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate},
			want:   true,
		},
		"ObserveDelete": {
			reason: "Delete writes.",
			mp:     xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionDelete},
			want:   true,
		},
		"All": {
			reason: "\"*\" writes.",
			mp:     xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			want:   true,
		},
		"ObserveLateInitialize": {
			reason: "LateInitialize changes only the object, never GCP.",
			mp:     xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionLateInitialize},
			want:   false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &v1beta1.SecurityPolicy{}
			p.SetManagementPolicies(tc.mp) // Keep nil and empty apart.
			if diff := cmp.Diff(tc.want, Writes(p)); diff != "" {
				t.Errorf("\n%s\nWrites(%v): -want, +got:\n%s", tc.reason, tc.mp, diff)
			}
		})
	}
}
