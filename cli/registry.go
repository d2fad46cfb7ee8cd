package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
)

// openRegistry opens the store's account registry (ORDERSYNC_STORE_DSN).
func (a *App) openRegistry(ctx context.Context) (accounts.Registry, func(), error) {
	st, err := store.Open(ctx, a.Process.StoreDSN)
	if err != nil {
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	reg, ok := registryOf(st)
	if !ok {
		_ = st.Close()
		return nil, nil, fmt.Errorf("this store keeps no account registry")
	}
	return reg, func() { _ = st.Close() }, nil
}

// registryOf is the store's account registry.
func registryOf(st store.Store) (accounts.Registry, bool) { return store.RegistryOf(st) }

// accountService is the registry plus the Temporal side, as the CLI and
// the HTTP API use them.
func (a *App) accountService(ctx context.Context) (*accounts.Service, client.Client, func(), error) {
	reg, closeReg, err := a.openRegistry(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := a.Dial(ctx)
	if err != nil {
		closeReg()
		return nil, nil, nil, err
	}
	return &accounts.Service{Registry: reg, Engine: starter.Engine{Client: c}}, c, func() { c.Close(); closeReg() }, nil
}

// SeedRegistry registers the file's platforms that the registry does not
// hold yet, so a worker started with a platforms file (a setup from before
// the registry, or a team that keeps accounts in Git) fetches for them.
// It never overwrites an entry or takes a removed name: once registered,
// the registry is the truth, and a file that differs from it is named in
// a warning that says how to apply it.
//
// A platform whose cursor already runs keeps the task queue it runs on
// (a file without task_queue meant orders-<platform> before the registry),
// so the upgrade strands no cursor. The file's destinations are
// registered the same way (SeedDestinations).
func SeedRegistry(ctx context.Context, reg accounts.Registry, f *config.File, engine accounts.Engine, logf func(msg string, args ...any)) error {
	err := seedEntries(ctx, reg, f, f.Platforms, seedClass[config.Platform]{
		noun:  "platform",
		class: accounts.ClassPlatform,
		name:  func(p config.Platform) string { return p.Name },
		differs: func(e accounts.Entry, p config.Platform) bool {
			cur, err := accounts.DecodePlatform(e)
			return err == nil && !accounts.SamePlatform(cur, p)
		},
		prepare: func(ctx context.Context, p *config.Platform) error {
			q, running, err := engine.RunningQueue(ctx, p.Name)
			if err != nil {
				return err
			}
			if running && q != p.TaskQueue {
				logf("platform keeps the task queue its cursor runs on", "platform", p.Name, "task_queue", q, "file_says", p.TaskQueue)
				p.TaskQueue = q
			}
			return nil
		},
		entry:         func(p config.Platform) (accounts.Entry, error) { return accounts.PlatformEntry(p, accounts.Active) },
		removedMsg:    "platform in the file was removed from the registry; not served",
		differsMsg:    "the platforms file differs from the registry, which wins; run `ordersync platform apply -f FILE` to apply the file",
		registeredMsg: "registered platform from the platforms file",
	}, logf)
	if err != nil {
		return err
	}
	return SeedDestinations(ctx, reg, f, logf)
}

// platformFromFlags builds a validated platform from add's flags, through
// accounts.BuildPlatform: the same merge and checks as a platforms file
// (built-in and kind defaults, then the flags) and as the HTTP API's add.
func platformFromFlags(name, kind, endpoint string, cred config.CredentialRef, sets []string) (config.Platform, error) {
	entry := map[string]any{}
	if kind != "" {
		entry["kind"] = kind
	}
	if endpoint != "" {
		entry["endpoint"] = endpoint
	}
	// Every flag given goes in, so that two are refused by the file's rule.
	ref := map[string]any{}
	for k, v := range map[string]string{"env": cred.Env, "file": cred.File, "stored": cred.Stored} {
		if v != "" {
			ref[k] = v
		}
	}
	if len(ref) > 0 {
		entry["credentials"] = ref
	}
	for _, s := range sets {
		if err := setPath(entry, s); err != nil {
			return config.Platform{}, err
		}
	}
	return accounts.BuildPlatform(name, entry)
}

// editPlatform applies --set and --unset to registered settings (as JSON)
// through accounts.EditSettings, as the HTTP API's PATCH does.
func editPlatform(p *config.Platform, sets, unsets []string) error {
	return accounts.EditSettings(p, func(m map[string]any) error {
		for _, s := range sets {
			if err := setPath(m, s); err != nil {
				return err
			}
		}
		for _, key := range unsets {
			if err := unsetPath(m, key); err != nil {
				return err
			}
		}
		return nil
	})
}

// setPath applies one key=value, the key a dotted path (rate_limit.rps,
// options.api_version), the value YAML (10m, 5, true, [a, b]).
func setPath(m map[string]any, kv string) error {
	key, raw, ok := strings.Cut(kv, "=")
	if !ok || key == "" {
		return fmt.Errorf("--set %q: want key=value, e.g. interval=10m or rate_limit.rps=5", kv)
	}
	var v any
	if err := yaml.Unmarshal([]byte(raw), &v); err != nil {
		return fmt.Errorf("--set %s: the value is not YAML: %v", key, err)
	}
	v = jsonable(v)
	if key == "name" {
		return fmt.Errorf("--set name: the name cannot be set; it is the platform's key")
	}
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
	return nil
}

func unsetPath(m map[string]any, key string) error {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			return fmt.Errorf("--unset %s: no such setting", key)
		}
		m = next
	}
	if _, ok := m[parts[len(parts)-1]]; !ok {
		return fmt.Errorf("--unset %s: no such setting", key)
	}
	delete(m, parts[len(parts)-1])
	return nil
}

// jsonable turns YAML's decoded values into JSON's: timestamps as
// RFC3339 text, mappings with string keys.
func jsonable(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
	}
	return v
}

// printEntry says what a registry change did.
func printEntry(app *App, verb string, e accounts.Entry) error {
	return printEntryAs(app, verb, e, entryView(e))
}

// registryRow is how a registry entry is shown (settings without secrets:
// they hold references only).
type registryRow struct {
	Platform string `json:"platform"`
	entryFields
}

func entryView(e accounts.Entry) registryRow {
	return registryRow{Platform: e.Name, entryFields: fieldsOf(e)}
}

// resolvePlatforms finds each named platform in the registry, or else in
// the platforms file (a setup not registered yet); all registered
// platforms that are not removed (and the file's) when names is empty.
func (a *App) resolvePlatforms(ctx context.Context, names []string) ([]config.Platform, error) {
	reg, closeReg, err := a.openRegistry(ctx)
	if err != nil {
		return nil, err
	}
	defer closeReg()
	f, err := a.loadPlatformsIfAny()
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		var out []config.Platform
		seen := map[string]bool{}
		err := accounts.EachEntry(ctx, reg, accounts.Filter{Class: accounts.ClassPlatform}, func(e accounts.Entry) error {
			p, err := accounts.DecodePlatform(e)
			if err != nil {
				return err
			}
			out, seen[p.Name] = append(out, p), true
			return nil
		})
		if err != nil {
			return nil, err
		}
		if f != nil {
			for _, p := range f.Platforms {
				if !seen[p.Name] {
					out = append(out, p)
				}
			}
		}
		if len(out) == 0 {
			return nil, Usage(fmt.Errorf("no platform is registered (ordersync platform add, or platform apply -f FILE)"))
		}
		return out, nil
	}
	out := make([]config.Platform, 0, len(names))
	for _, name := range names {
		e, found, err := reg.Get(ctx, accounts.ClassPlatform, name)
		if err != nil {
			return nil, err
		}
		if found && e.State != accounts.Removed {
			p, err := accounts.DecodePlatform(e)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
			continue
		}
		if f != nil {
			if p, ok := f.Get(name); ok {
				out = append(out, p)
				continue
			}
		}
		if found {
			return nil, Usage(fmt.Errorf("platform %s was removed at revision %d", term(name), e.Revision))
		}
		return nil, Usage(fmt.Errorf("unknown platform %q: not registered (ordersync platform list) and not in a platforms file", clipText(name, 100)))
	}
	return out, nil
}

// recordPaused keeps the registry's state in step with a cursor paused or
// resumed by hand, so a list filtered by state tells the truth and a
// re-added worker starts it paused. A platform not registered is left.
func (a *App) recordPaused(ctx context.Context, name string, paused bool) error {
	reg, closeReg, err := a.openRegistry(ctx)
	if err != nil {
		return err
	}
	defer closeReg()
	e, found, err := reg.Get(ctx, accounts.ClassPlatform, name)
	want := map[bool]accounts.State{true: accounts.Paused, false: accounts.Active}[paused]
	if err != nil || !found || e.State == accounts.Removed || e.State == want {
		return err
	}
	e.State = want
	if _, err := reg.Put(ctx, e, e.Revision); err != nil {
		return fmt.Errorf("record %s as %s in the registry: %w", name, want, err)
	}
	return nil
}
