// Package tsetup prepares a Temporal namespace for ordersync: the namespace
// exists, keeps closed workflows long enough (failed slices stay visible in
// the Web UI for weeks) and has the search attributes the workflows write
// (internal/searchattr). `ordersync setup` runs it; `ordersync worker`
// checks the attributes with MissingAttributes before it starts.
//
// Every step looks first and changes only what is missing, so a second run
// changes nothing, and a check-only run (DryRun) reports what a real run
// would do. A longer retention than the minimum is never lowered.
//
// On Temporal Cloud namespaces and their retention belong to the Cloud
// control plane (tcld, Terraform, the Cloud UI, the Cloud Ops API), not to
// the frontend ordersync talks to: there setup only reports what is missing,
// with the tcld command that fixes it, and adds search attributes through
// the operator service only where the account permits it.
package tsetup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ordersync/ordersync/internal/searchattr"
)

// DefaultRetention is the least retention ordersync asks for: a dead-lettered
// slice's workflow must stay visible long after it failed.
const DefaultRetention = 30 * 24 * time.Hour

// Options says what the namespace must look like.
type Options struct {
	Namespace string
	// MinRetention is the least retention (default DefaultRetention).
	MinRetention time.Duration
	// Attributes must exist with these types (default searchattr.All).
	Attributes []searchattr.Definition
	// DryRun looks and reports; it changes nothing.
	DryRun bool
	// Cloud says the frontend is Temporal Cloud (see the package doc).
	Cloud bool
	// Settle bounds the wait until the frontend serves what setup changed
	// (default 30s; servers cache namespaces for a few seconds).
	Settle time.Duration
}

// Step states.
const (
	StateOK       = "ok"       // already as required
	StateCreated  = "created"  // the namespace was registered
	StateRaised   = "raised"   // the retention was raised to the minimum
	StateAdded    = "added"    // the search attribute was added
	StateMissing  = "missing"  // needs a change (DryRun), or one setup may not make here
	StateConflict = "conflict" // exists in a way setup must not change (an attribute's type)
)

// Step is one thing setup looked at.
type Step struct {
	// Item is "namespace", "retention" or "search attribute <Name>".
	Item  string `json:"item"`
	State string `json:"state"`
	// Detail says what was found and what was (or would be) done.
	Detail string `json:"detail"`
	// Manual is the command that makes the change where setup may not
	// (Temporal Cloud), empty otherwise.
	Manual string `json:"manual,omitempty"`
}

// Report is what a run found and did.
type Report struct {
	Namespace string `json:"namespace"`
	DryRun    bool   `json:"check_only"`
	Steps     []Step `json:"steps"`
}

// Changed says whether the run changed the namespace.
func (r Report) Changed() bool {
	for _, s := range r.Steps {
		switch s.State {
		case StateCreated, StateRaised, StateAdded:
			return true
		}
	}
	return false
}

// Complete says whether the namespace is as ordersync needs it.
func (r Report) Complete() bool {
	for _, s := range r.Steps {
		if s.State == StateMissing || s.State == StateConflict {
			return false
		}
	}
	return true
}

// Services are the two Temporal APIs setup uses; an SDK client's
// WorkflowService() and OperatorService() provide them.
type Services struct {
	Workflow workflowservice.WorkflowServiceClient
	Operator operatorservice.OperatorServiceClient
}

// Run brings the namespace to what opts ask (or, with DryRun, reports how
// far it is). The report lists every step, also when an error stops it.
func Run(ctx context.Context, svc Services, opts Options) (Report, error) {
	opts.applyDefaults()
	r := &run{svc: svc, opts: opts, report: Report{Namespace: opts.Namespace, DryRun: opts.DryRun}}
	err := r.all(ctx)
	return r.report, err
}

// IsCloudAddress reports whether a frontend address is Temporal Cloud's:
// <namespace>.<account>.tmprl.cloud (mTLS) or <region>.<cloud>.api.temporal.io
// (API keys).
func IsCloudAddress(hostPort string) bool {
	host := strings.ToLower(hostPort)
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	return strings.HasSuffix(host, ".tmprl.cloud") || strings.HasSuffix(host, ".api.temporal.io")
}

// ErrNoNamespace is MissingAttributes' answer for a namespace that does not exist.
var ErrNoNamespace = errors.New("namespace does not exist")

// MissingAttributes returns those of want the namespace lacks or has with
// another type.
func MissingAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, want []searchattr.Definition) ([]searchattr.Definition, error) {
	have, err := listAttributes(ctx, op, namespace)
	if isNotFound(err) {
		return nil, fmt.Errorf("namespace %s: %w", namespace, ErrNoNamespace)
	}
	if err != nil {
		return nil, err
	}
	var missing []searchattr.Definition
	for _, d := range want {
		if t, ok := have[d.Name]; !ok || t != d.Type {
			missing = append(missing, d)
		}
	}
	return missing, nil
}

func (o *Options) applyDefaults() {
	if o.MinRetention == 0 {
		o.MinRetention = DefaultRetention
	}
	if o.Attributes == nil {
		o.Attributes = searchattr.All
	}
	if o.Settle == 0 {
		o.Settle = 30 * time.Second
	}
}

type run struct {
	svc    Services
	opts   Options
	report Report
}

func (r *run) add(s Step) { r.report.Steps = append(r.report.Steps, s) }

func (r *run) all(ctx context.Context) error {
	exists, err := r.namespace(ctx)
	if err != nil || !exists {
		// Without the namespace there is nothing to look at yet: a check
		// reports every attribute as missing, Cloud waits for the operator.
		if err == nil {
			for _, d := range r.opts.Attributes {
				r.missingAttribute(d, "the namespace does not exist yet")
			}
		}
		return err
	}
	if err := r.attributes(ctx); err != nil {
		return err
	}
	if r.report.Changed() {
		return r.waitServed(ctx)
	}
	return nil
}

// namespace checks (creates) the namespace and its retention; it reports
// whether the namespace exists now.
func (r *run) namespace(ctx context.Context) (bool, error) {
	ns, minRet := r.opts.Namespace, r.opts.MinRetention
	desc, err := r.svc.Workflow.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	switch {
	case isNotFound(err):
		step := Step{Item: "namespace", State: StateMissing, Detail: fmt.Sprintf("does not exist; would create it with retention %s", days(minRet))}
		if r.opts.Cloud {
			step.Detail = "does not exist; create it in Temporal Cloud"
			step.Manual = fmt.Sprintf("tcld namespace create --namespace %s --region <region> --retention-days %d --ca-certificate-file <ca.pem>", ns, ceilDays(minRet))
			r.add(step)
			return false, nil
		}
		if r.opts.DryRun {
			r.add(step)
			return false, nil
		}
		_, err := r.svc.Workflow.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace:                        ns,
			Description:                      "ordersync: platform cursors, slices, dead letters",
			WorkflowExecutionRetentionPeriod: durationpb.New(minRet),
		})
		if err != nil && code(err) != codes.AlreadyExists { // AlreadyExists: another setup won the race
			r.add(step)
			return false, fmt.Errorf("create namespace %s: %w%s", ns, err, permissionHint(err))
		}
		r.add(Step{Item: "namespace", State: StateCreated, Detail: "created"})
		r.add(Step{Item: "retention", State: StateOK, Detail: fmt.Sprintf("%s (set at creation)", days(minRet))})
		return true, nil
	case err != nil:
		return false, fmt.Errorf("describe namespace %s: %w", ns, err)
	}
	r.add(Step{Item: "namespace", State: StateOK, Detail: "exists"})

	have := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
	if have >= minRet {
		r.add(Step{Item: "retention", State: StateOK, Detail: days(have)})
		return true, nil
	}
	step := Step{Item: "retention", State: StateMissing, Detail: fmt.Sprintf("%s, below %s; would raise it to %s", days(have), days(minRet), days(minRet))}
	if r.opts.Cloud {
		step.Detail = fmt.Sprintf("%s, below %s; raise it in Temporal Cloud", days(have), days(minRet))
		step.Manual = fmt.Sprintf("tcld namespace retention set --namespace %s --retention-days %d", ns, ceilDays(minRet))
		r.add(step)
		return true, nil
	}
	if r.opts.DryRun {
		r.add(step)
		return true, nil
	}
	_, err = r.svc.Workflow.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
		Namespace: ns,
		Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(minRet)},
	})
	if err != nil {
		r.add(step)
		return true, fmt.Errorf("raise the retention of namespace %s to %s: %w%s", ns, days(minRet), err, permissionHint(err))
	}
	r.add(Step{Item: "retention", State: StateRaised, Detail: fmt.Sprintf("raised from %s to %s", days(have), days(minRet))})
	return true, nil
}

// attributes checks (adds) every search attribute, in one request.
func (r *run) attributes(ctx context.Context) error {
	have, err := listAttributes(ctx, r.svc.Operator, r.opts.Namespace)
	// A namespace just created is not found until the frontend's namespace
	// cache sees it (a few seconds).
	for deadline := time.Now().Add(r.opts.Settle); isNotFound(err) && r.report.Changed() && time.Now().Before(deadline); {
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
		have, err = listAttributes(ctx, r.svc.Operator, r.opts.Namespace)
	}
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %s: %w", r.opts.Namespace, err)
	}
	toAdd := map[string]enumspb.IndexedValueType{}
	var conflicts []string
	for _, d := range r.opts.Attributes {
		t, ok := have[d.Name]
		switch {
		case ok && t == d.Type:
			r.add(Step{Item: attrItem(d), State: StateOK, Detail: d.Type.String()})
		case ok:
			// A type cannot be changed in place: removing the attribute
			// drops it from every workflow, so that is the operator's call.
			r.add(Step{Item: attrItem(d), State: StateConflict,
				Detail: fmt.Sprintf("exists as %s, ordersync writes %s; remove it (temporal operator search-attribute delete) and run setup again", t, d.Type)})
			conflicts = append(conflicts, d.Name)
		default:
			toAdd[d.Name] = d.Type
		}
	}
	if len(toAdd) > 0 && !r.opts.DryRun {
		_, err = r.svc.Operator.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: r.opts.Namespace, SearchAttributes: toAdd})
		if err != nil && !(r.opts.Cloud && IsRefused(err)) {
			for _, d := range r.opts.Attributes {
				if _, ok := toAdd[d.Name]; ok {
					r.missingAttribute(d, "not added")
				}
			}
			return fmt.Errorf("add search attributes to namespace %s: %w%s", r.opts.Namespace, err, permissionHint(err))
		}
		if err == nil {
			for _, d := range r.opts.Attributes {
				if _, ok := toAdd[d.Name]; ok {
					r.add(Step{Item: attrItem(d), State: StateAdded, Detail: "added as " + d.Type.String()})
				}
			}
			toAdd = nil
		}
	}
	for _, d := range r.opts.Attributes {
		if _, ok := toAdd[d.Name]; ok {
			r.missingAttribute(d, "does not exist")
		}
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("namespace %s: search attribute %s has another type than ordersync writes", r.opts.Namespace, strings.Join(conflicts, ", "))
	}
	return nil
}

func (r *run) missingAttribute(d searchattr.Definition, why string) {
	step := Step{Item: attrItem(d), State: StateMissing, Detail: fmt.Sprintf("%s; would add it as %s", why, d.Type)}
	if r.opts.Cloud {
		step.Detail = fmt.Sprintf("%s; add it in Temporal Cloud", why)
		step.Manual = fmt.Sprintf("tcld namespace search-attributes add --namespace %s --search-attribute %s=%s", r.opts.Namespace, d.Name, d.Type)
	}
	r.add(step)
}

// waitServed waits until the frontend accepts a visibility query naming
// every attribute: a namespace or attribute just saved is served only once
// the services' caches refresh, and a cursor started before that is
// refused ("search attribute Platform is not defined").
func (r *run) waitServed(ctx context.Context) error {
	terms := make([]string, len(r.opts.Attributes))
	for i, d := range r.opts.Attributes {
		terms[i] = d.Name + " IS NULL"
	}
	query := strings.Join(terms, " OR ")
	deadline := time.Now().Add(r.opts.Settle)
	for {
		_, err := r.svc.Workflow.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: r.opts.Namespace, Query: query})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s: the changes are saved but the frontend did not serve them within %s: %w", r.opts.Namespace, r.opts.Settle, err)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func listAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string) (map[string]enumspb.IndexedValueType, error) {
	resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	return resp.GetCustomAttributes(), nil
}

func attrItem(d searchattr.Definition) string { return "search attribute " + d.Name }

// isNotFound recognises a namespace that does not exist. SQL visibility's
// ListSearchAttributes wraps that as Unavailable, so its text counts too.
func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	return code(err) == codes.NotFound || strings.Contains(err.Error(), " is not found.") // serviceerror.NewNamespaceNotFound's text
}

// IsRefused recognises "you may not do this here": no permission, or an
// API the frontend does not offer.
func IsRefused(err error) bool {
	switch code(err) {
	case codes.PermissionDenied, codes.Unimplemented, codes.Unauthenticated:
		return true
	}
	return false
}

// code is the gRPC code of a Temporal error, whether it arrives as a
// serviceerror (through the SDK) or a plain gRPC status.
func code(err error) codes.Code { return serviceerror.ToStatus(err).Code() }

func permissionHint(err error) string {
	if !IsRefused(err) {
		return ""
	}
	return " (this identity may not change namespaces here: ask the cluster's operator, or run `ordersync setup --check` to list what is missing)"
}

// days prints a retention the way operators set it.
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

func ceilDays(d time.Duration) int64 {
	return int64((d + 24*time.Hour - 1) / (24 * time.Hour))
}
