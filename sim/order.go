package sim

import (
	"strconv"
	"strings"
	"time"
)

// order is the only per-order state kept in memory (24 bytes). Everything
// else — versions, line items, customer — is re-derived from seed on demand,
// which is what lets a million orders fit comfortably.
type order struct {
	created int64  // unix µs
	seed    uint64 // derives versions and details
	shown   int8   // index of the version the list shows; -1 before the first is visible
}

// version is one state of an order, derived from the order's seed.
type version struct {
	updated int64 // unix µs, the updated_at the API reports
	visible int64 // unix µs from which the list shows this version
	total   int64 // cents
	status  status
}

type status uint8

const (
	statusPending status = iota
	statusPaid
	statusShipped
	statusDelivered
	statusCancelled
	statusRefunded
)

var statusNames = [...]string{"pending", "paid", "shipped", "delivered", "cancelled", "refunded"}

func (s status) String() string { return statusNames[s] }

// next moves an order along pending -> paid -> shipped -> delivered, with
// cancellations and refunds on the way; cancelled and refunded are final.
func (s status) next(r *rng) status {
	p := r.intn(100)
	switch s {
	case statusPending:
		if p < 90 {
			return statusPaid
		}
		return statusCancelled
	case statusPaid:
		switch {
		case p < 85:
			return statusShipped
		case p < 95:
			return statusRefunded
		}
		return statusCancelled
	case statusShipped:
		if p < 90 {
			return statusDelivered
		}
		return statusRefunded
	case statusDelivered:
		if p < 10 {
			return statusRefunded
		}
	}
	return s
}

// Random streams derived from an order's seed; separate streams keep the
// versions independent of how the details are generated.
const (
	streamVersions = 1
	streamDetails  = 2
)

// versionBuf holds an order's versions without allocating.
type versionBuf [MaxUpdatesLimit + 1]version

// shape is the part of the config that shapes an order's versions, in µs.
type shape struct {
	maxUpdates int64
	spread     int64
	late       int64
}

// versions derives o's versions in update order. Versions updated at or after
// stopAt do not exist (StopCreating); visible times never decrease, so the
// visible versions at any instant are a prefix.
func (sh shape) versions(o *order, stopAt int64, buf *versionBuf) []version {
	r := newRNG(o.seed, streamVersions)
	n := int(r.intn(sh.maxUpdates + 1))
	var times [MaxUpdatesLimit]int64
	for i := 0; i < n; i++ {
		times[i] = o.created + 1 + r.intn(sh.spread)
		for j := i; j > 0 && times[j] < times[j-1]; j-- { // insertion sort: n <= 15
			times[j], times[j-1] = times[j-1], times[j]
		}
	}
	vs := buf[:n+1]
	d := newDetails(o.seed)
	vs[0] = version{updated: o.created, visible: o.created + r.intn(sh.late+1), total: d.total(), status: statusPending}
	for i := 1; i <= n; i++ {
		prev := vs[i-1]
		v := version{updated: max(times[i-1], prev.updated+1), status: prev.status.next(&r), total: prev.total}
		if r.intn(4) == 0 { // adjustments: discounts, shipping changes, partial refunds
			v.total = max(1, v.total+v.total*(r.intn(21)-10)/100)
		}
		v.visible = max(v.updated+r.intn(sh.late+1), prev.visible)
		vs[i] = v
	}
	for k := range vs {
		if vs[k].updated >= stopAt {
			return vs[:k]
		}
	}
	return vs
}

// visibleAt returns the index of the newest version visible at t, or -1.
func visibleAt(vs []version, t int64) int {
	k := -1
	for i := range vs {
		if vs[i].visible > t {
			break
		}
		k = i
	}
	return k
}

// orderID renders a fixed-width id so that string order equals sequence
// order, which keeps the (updated_at, id) sort cheap.
func orderID(seq uint32) string { return strconv.FormatUint(1_000_000_000+uint64(seq), 10) }

func formatMicros(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339Nano) }

func formatCents(c int64) string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	frac := strconv.FormatInt(c%100, 10)
	if len(frac) == 1 {
		frac = "0" + frac
	}
	return sign + strconv.FormatInt(c/100, 10) + "." + frac
}

// wireOrder is an order as the list endpoint renders it.
type wireOrder struct {
	ID        string         `json:"id"`
	Status    string         `json:"status"`
	CreatedAt string         `json:"created_at"`
	UpdatedAt string         `json:"updated_at"`
	Currency  string         `json:"currency"`
	Total     string         `json:"total"`
	LineItems []wireLineItem `json:"line_items"`
	Customer  wireCustomer   `json:"customer"`
}

type wireLineItem struct {
	SKU   string `json:"sku"`
	Title string `json:"title"`
	Qty   int64  `json:"qty"`
	Price string `json:"price"`
}

type wireCustomer struct {
	Name    string      `json:"name"`
	Email   string      `json:"email"`
	Phone   string      `json:"phone"`
	Address wireAddress `json:"address"`
}

type wireAddress struct {
	Street  string `json:"street"`
	City    string `json:"city"`
	Zip     string `json:"zip"`
	Country string `json:"country"`
}

// render builds the JSON shape of order seq at version v.
func render(seq uint32, o *order, v version, currency string) wireOrder {
	d := newDetails(o.seed)
	items := make([]wireLineItem, d.n)
	for i := range items {
		it := d.items[i]
		items[i] = wireLineItem{SKU: "SKU-" + strconv.Itoa(int(it.sku)), Title: products[it.product], Qty: it.qty, Price: formatCents(it.price)}
	}
	first, last, city := firstNames[d.first], lastNames[d.last], cities[d.city]
	return wireOrder{
		ID:        orderID(seq),
		Status:    v.status.String(),
		CreatedAt: formatMicros(o.created),
		UpdatedAt: formatMicros(v.updated),
		Currency:  currency,
		Total:     formatCents(v.total),
		LineItems: items,
		Customer: wireCustomer{
			Name:  first + " " + last,
			Email: strings.ToLower(first+"."+last) + strconv.Itoa(int(d.mailNo)) + "@example.com",
			Phone: city.phone + " " + strconv.Itoa(int(d.phone)),
			Address: wireAddress{
				Street:  strconv.Itoa(int(d.houseNo)) + " " + streets[d.street],
				City:    city.name,
				Zip:     strconv.Itoa(int(d.zip)),
				Country: city.country,
			},
		},
	}
}
