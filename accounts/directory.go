package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ordersync/ordersync/config"
)

// DefaultPollInterval is how often a Directory asks the registry for
// changes: a new account is served, and a removed one refused, within
// about this long on every worker.
const DefaultPollInterval = 2 * time.Second

// maxCached bounds a Directory's memory: it caches the platforms this
// worker fetched for, never the whole registry, so 100,000 registered but
// quiet accounts cost a worker nothing.
const maxCached = 20000

// lookupTimeout bounds one registry read on an activity's path.
const lookupTimeout = 10 * time.Second

// Directory is one worker process's view of the registry's platforms: it
// resolves a platform's settings by name (read through, cached, kept
// fresh by polling the registry's changes) and tells the worker which task
// queues the registered platforms use, so a new queue gets pollers
// without a restart. It is safe for concurrent use.
type Directory struct {
	reg      Registry
	interval time.Duration
	logger   *slog.Logger

	mu     sync.Mutex
	seen   int64 // the last revision whose changes were applied
	cached entryCache[config.Platform]
	queues queueList
	poke   chan struct{}
	// The destinations' side (directory_destinations.go).
	dests      entryCache[config.Destination]
	destQueues queueList
}

// queueList is the task queues one class's registered entries use, and
// who is told when they change; the Directory's mu guards it.
type queueList struct {
	class  Class
	queues []string
	watch  []func([]string)
	// stale: a change of the class was seen and the list not read since
	// (or the read failed); the next poll reads it.
	stale bool
}

func (d *Directory) queuesOf(q *queueList) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(q.queues)
}

func (d *Directory) onQueues(q *queueList, f func([]string)) {
	d.mu.Lock()
	q.watch = append(q.watch, f)
	d.mu.Unlock()
}

// pollQueues reads q's task queues again if it is stale and tells the
// watchers when they changed. A failed read leaves it stale, so the next
// poll tries again even when nothing of the class changes meanwhile.
func (d *Directory) pollQueues(ctx context.Context, q *queueList) error {
	d.mu.Lock()
	stale := q.stale
	d.mu.Unlock()
	if !stale {
		return nil
	}
	queues, err := d.reg.TaskQueues(ctx, q.class)
	if err != nil {
		return err
	}
	d.mu.Lock()
	q.stale = false
	same := slices.Equal(queues, q.queues)
	q.queues = queues
	watch := slices.Clone(q.watch)
	d.mu.Unlock()
	if !same {
		for _, f := range watch {
			f(slices.Clone(queues))
		}
	}
	return nil
}

// entryCache holds the decoded registry entries of one class that this
// worker looked up, by name; the Directory's mu guards it.
type entryCache[T any] struct {
	class  Class
	decode func(Entry) (T, error)
	m      map[string]cachedEntry[T]
}

type cachedEntry[T any] struct {
	entry Entry
	value T
}

func newEntryCache[T any](class Class, decode func(Entry) (T, error)) entryCache[T] {
	return entryCache[T]{class: class, decode: decode, m: map[string]cachedEntry[T]{}}
}

// lookup resolves name in c, reading the registry through on a miss.
// found is false for a name the registry does not hold; a removed entry
// is found, in state Removed.
func lookup[T any](ctx context.Context, d *Directory, c *entryCache[T], name string) (T, State, bool, error) {
	var zero T
	d.mu.Lock()
	hit, ok := c.m[name]
	seenBefore := d.seen
	d.mu.Unlock()
	if ok {
		return hit.value, hit.entry.State, true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	e, found, err := d.reg.Get(ctx, c.class, name)
	if err != nil || !found {
		return zero, "", false, err
	}
	v, err := c.decode(e)
	if err != nil {
		return zero, "", false, err
	}
	d.mu.Lock()
	if len(c.m) >= maxCached {
		for k := range c.m { // evict one arbitrary entry: reads are cheap
			delete(c.m, k)
			break
		}
	}
	// A poll that ran during the read may have dropped a newer change
	// this read missed: keep the read only if no poll ran meanwhile.
	if d.seen == seenBefore {
		c.m[name] = cachedEntry[T]{entry: e, value: v}
	}
	d.mu.Unlock()
	return v, e.State, true, nil
}

// NewDirectory returns a directory over reg that polls every interval
// (0: DefaultPollInterval) once Run runs.
func NewDirectory(reg Registry, interval time.Duration, logger *slog.Logger) *Directory {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Directory{reg: reg, interval: interval, logger: logger,
		cached: newEntryCache(ClassPlatform, DecodePlatform), dests: newEntryCache(ClassDestination, DecodeDestination),
		queues: queueList{class: ClassPlatform}, destQueues: queueList{class: ClassDestination},
		poke: make(chan struct{}, 1)}
}

// Load reads the registry's revision and task queues: call it once before
// Run, so the worker starts with every queue registered now.
func (d *Directory) Load(ctx context.Context) error {
	rev, err := d.reg.Revision(ctx)
	if err != nil {
		return fmt.Errorf("read the registry: %w", err)
	}
	queues, err := d.reg.TaskQueues(ctx, ClassPlatform)
	if err != nil {
		return fmt.Errorf("read the registry's task queues: %w", err)
	}
	destQueues, err := d.reg.TaskQueues(ctx, ClassDestination)
	if err != nil {
		return fmt.Errorf("read the registry's delivery task queues: %w", err)
	}
	d.mu.Lock()
	d.seen, d.queues.queues, d.destQueues.queues = rev, queues, destQueues
	d.mu.Unlock()
	return nil
}

// TaskQueues lists the task queues of the registered platforms.
func (d *Directory) TaskQueues() []string { return d.queuesOf(&d.queues) }

// OnTaskQueues calls f (from Run's goroutine) with the full queue list
// whenever it changes.
func (d *Directory) OnTaskQueues(f func([]string)) { d.onQueues(&d.queues, f) }

// Watcher is a Registry that can say at once that it changed (PostgreSQL's
// LISTEN/NOTIFY): Watch calls changed after each committed write until ctx
// ends or it fails.
type Watcher interface {
	Watch(ctx context.Context, changed func()) error
}

// watchRetry is how long a failed Watch waits before it listens again.
const watchRetry = 5 * time.Second

// Run polls the registry until ctx ends, and, where the registry is a
// Watcher, polls at once on each of its notifications, so a change made
// anywhere reaches this worker in milliseconds rather than at the next
// tick. A failed poll is logged and retried at the next tick; the
// directory keeps its last view meanwhile.
func (d *Directory) Run(ctx context.Context) {
	if w, ok := d.reg.(Watcher); ok {
		go d.listen(ctx, w)
	}
	t := time.NewTicker(d.interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.poke:
		}
		if err := d.poll(ctx); err != nil {
			if !failing && ctx.Err() == nil {
				d.logger.Error("registry poll failed; serving the last view", "error", err)
			}
			failing = true
			continue
		}
		if failing {
			d.logger.Info("registry poll works again")
		}
		failing = false
	}
}

// listen listens for the registry's notifications until ctx ends.
func (d *Directory) listen(ctx context.Context, w Watcher) {
	for ctx.Err() == nil {
		if err := w.Watch(ctx, d.Refresh); err != nil && ctx.Err() == nil {
			d.logger.Warn("registry notifications failed; polling until they work again", "error", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(watchRetry):
		}
	}
}

// Refresh asks Run to poll at once (before a worker refuses a platform it
// does not know, say).
func (d *Directory) Refresh() {
	select {
	case d.poke <- struct{}{}:
	default:
	}
}

// Sync applies the registry's changes now, in the caller's goroutine (a
// test, or a process that must see its own write before it goes on).
func (d *Directory) Sync(ctx context.Context) error { return d.poll(ctx) }

// poll applies the changes since the last revision seen.
func (d *Directory) poll(ctx context.Context) error {
	d.mu.Lock()
	since := d.seen
	d.mu.Unlock()
	for {
		page, err := d.reg.Changes(ctx, since, MaxPage)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		d.mu.Lock()
		for _, e := range page {
			// Read again, with its new settings, when next asked; and
			// read the class's queues again (stale until that works).
			if e.Class == ClassDestination {
				delete(d.dests.m, e.Name)
				d.destQueues.stale = true
			} else {
				delete(d.cached.m, e.Name)
				d.queues.stale = true
			}
		}
		since = page[len(page)-1].Revision
		d.seen = since
		d.mu.Unlock()
		if len(page) < MaxPage {
			break
		}
	}
	// Both lists are read even when one fails: each stays stale alone.
	return errors.Join(d.pollQueues(ctx, &d.destQueues), d.pollQueues(ctx, &d.queues))
}

// Lookup resolves a platform by name: its settings and state. found is
// false for a name the registry does not hold; a removed platform is
// found, in state Removed.
func (d *Directory) Lookup(ctx context.Context, name string) (config.Platform, State, bool, error) {
	return lookup(ctx, d, &d.cached, name)
}

// Get is Lookup for a platform that may be fetched for (active or
// paused), in the form activities.DeclaredPlatforms asks.
func (d *Directory) Get(name string) (config.Platform, bool) {
	p, state, found, err := d.Lookup(context.Background(), name)
	if err != nil {
		d.logger.Error("registry lookup failed", "platform", name, "error", err)
		return config.Platform{}, false
	}
	return p, found && state != Removed
}
