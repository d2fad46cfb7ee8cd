package sim

// details are an order's line items and fake personal data, derived from its
// seed. They never change across versions; only status and total do.
type details struct {
	n       int
	items   [5]lineItem
	ship    int64 // shipping in cents
	first   int64
	last    int64
	mailNo  int64
	phone   int64
	houseNo int64
	street  int64
	city    int64
	zip     int64
	// extra drives the rest of what the Shopify surface shows (note, gift
	// wrap, a free-shipping code, the tracking number); drawn last, so
	// every detail before it is what it always was.
	extra int64
}

type lineItem struct {
	product int64
	sku     int64
	qty     int64
	price   int64 // cents
}

func newDetails(seed uint64) details {
	r := newRNG(seed, streamDetails)
	var d details
	d.n = 1 + int(r.intn(int64(len(d.items))))
	for i := 0; i < d.n; i++ {
		d.items[i] = lineItem{
			product: r.intn(int64(len(products))),
			sku:     1000 + r.intn(9000),
			qty:     1 + r.intn(3),
			price:   199 + r.intn(20000),
		}
	}
	if r.intn(3) == 0 {
		d.ship = 499
	}
	d.first = r.intn(int64(len(firstNames)))
	d.last = r.intn(int64(len(lastNames)))
	d.mailNo = r.intn(100)
	d.phone = 1000000 + r.intn(9000000)
	d.houseNo = 1 + r.intn(200)
	d.street = r.intn(int64(len(streets)))
	d.city = r.intn(int64(len(cities)))
	d.zip = 10000 + r.intn(90000)
	d.extra = r.intn(1 << 40)
	return d
}

// total is the order's first total: its line items plus shipping.
func (d *details) total() int64 {
	t := d.ship
	for i := 0; i < d.n; i++ {
		t += d.items[i].qty * d.items[i].price
	}
	return t
}

var products = []string{
	"Espresso Cup", "Linen Shirt", "Trail Shoes", "Desk Lamp", "Wool Socks",
	"Notebook A5", "Water Bottle", "Phone Case", "Yoga Mat", "Tea Sampler",
	"Backpack", "Scented Candle", "Cutting Board", "Headphones", "Sunglasses",
}

var firstNames = []string{
	"Anna", "Ben", "Clara", "David", "Emma", "Felix", "Greta", "Hugo", "Ines", "Jonas",
	"Karla", "Leon", "Maria", "Noah", "Olivia", "Paul", "Rosa", "Samuel", "Tara", "Yusuf",
}

var lastNames = []string{
	"Schmidt", "Rossi", "Dubois", "Kowalski", "Garcia", "Jansen", "Novak", "Smith",
	"Andersson", "Costa", "Weber", "Moreau", "Silva", "Nielsen", "Horvat", "Brown",
}

var streets = []string{
	"Main Street", "Station Road", "Lindenallee", "Rue de la Paix", "Via Roma",
	"Kings Road", "Hauptstrasse", "Calle Mayor", "Market Square", "Harbour Lane",
}

type city struct{ name, country, phone string }

// countryNames are the cities' countries as Shopify names them.
var countryNames = map[string]string{"DE": "Germany", "FR": "France", "IT": "Italy", "ES": "Spain", "NL": "Netherlands",
	"AT": "Austria", "GB": "United Kingdom", "PL": "Poland", "PT": "Portugal", "DK": "Denmark"}

var cities = []city{
	{"Berlin", "DE", "+49 30"}, {"Hamburg", "DE", "+49 40"}, {"Paris", "FR", "+33 1"},
	{"Lyon", "FR", "+33 4"}, {"Milan", "IT", "+39 02"}, {"Madrid", "ES", "+34 91"},
	{"Amsterdam", "NL", "+31 20"}, {"Vienna", "AT", "+43 1"}, {"London", "GB", "+44 20"},
	{"Warsaw", "PL", "+48 22"}, {"Lisbon", "PT", "+351 21"}, {"Copenhagen", "DK", "+45 3"},
}

// currencies are assigned to shops by name, so a shop keeps its currency
// whatever else is in the config.
var currencies = []string{"EUR", "USD", "GBP", "EUR", "CHF"}
