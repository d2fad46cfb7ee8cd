package order_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/order"
)

// TestSchemaMatchesCanonicalType: every JSON field of Canonical (and of
// the types inside it) is a property of the schema and every property a
// field, of the same JSON type; a field is required exactly when Go
// always writes it (no omitempty or omitzero); every object is closed. A
// field added to the type without the schema, or the other way round,
// fails here.
func TestSchemaMatchesCanonicalType(t *testing.T) {
	var schema map[string]any
	require.NoError(t, json.Unmarshal(order.SchemaJSON, &schema))
	require.Equal(t, order.SchemaV1, schema["$id"])
	require.Equal(t, "https://json-schema.org/draft/2020-12/schema", schema["$schema"])
	defs, _ := schema["$defs"].(map[string]any)
	seen := map[reflect.Type]bool{}
	checkObject(t, "canonical", reflect.TypeOf(order.Canonical{}), schema, defs, seen)
	require.Len(t, seen, 8, "struct types checked: Canonical, Totals, Tax, Discount, ShippingLine, Customer, Address, CanonicalLine")
}

// resolve follows a local "$ref" into $defs.
func resolve(t *testing.T, where string, s map[string]any, defs map[string]any) map[string]any {
	t.Helper()
	ref, ok := s["$ref"].(string)
	if !ok {
		return s
	}
	name, found := strings.CutPrefix(ref, "#/$defs/")
	require.True(t, found, "%s: $ref %q is not into $defs", where, ref)
	d, ok := defs[name].(map[string]any)
	require.True(t, ok, "%s: $ref %q names no definition", where, ref)
	return d
}

func checkObject(t *testing.T, where string, typ reflect.Type, s map[string]any, defs map[string]any, seen map[reflect.Type]bool) {
	t.Helper()
	seen[typ] = true
	require.Equal(t, "object", s["type"], "%s: schema type", where)
	require.Equal(t, false, s["additionalProperties"], "%s: the object is closed", where)
	props, _ := s["properties"].(map[string]any)
	var required []string
	for _, r := range asSlice(s["required"]) {
		required = append(required, r.(string))
	}
	fields := map[string]bool{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		require.NotEmpty(t, name, "%s.%s has no JSON name", where, f.Name)
		fields[name] = true
		path := where + "." + name
		ps, ok := props[name].(map[string]any)
		require.True(t, ok, "%s: a field of %s the schema does not have", path, typ.Name())
		optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		require.Equal(t, !optional, slices.Contains(required, name), "%s: required in the schema exactly when Go always writes it", path)
		checkValue(t, path, f.Type, resolve(t, path, ps, defs), defs, seen)
	}
	for name := range props {
		require.True(t, fields[name], "%s.%s: a schema property %s has no field for", where, name, typ.Name())
	}
	for _, r := range required {
		require.True(t, fields[r], "%s: required %q is no property", where, r)
	}
}

func checkValue(t *testing.T, path string, typ reflect.Type, s map[string]any, defs map[string]any, seen map[reflect.Type]bool) {
	t.Helper()
	switch {
	case typ == reflect.TypeOf(time.Time{}):
		require.Equal(t, "string", s["type"], path)
		require.Equal(t, "date-time", s["format"], path)
	case typ.Kind() == reflect.Pointer:
		checkValue(t, path, typ.Elem(), s, defs, seen)
	case typ.Kind() == reflect.Slice:
		require.Equal(t, "array", s["type"], path)
		items, ok := s["items"].(map[string]any)
		require.True(t, ok, "%s: array without items", path)
		checkValue(t, path+"[]", typ.Elem(), resolve(t, path, items, defs), defs, seen)
	case typ.Kind() == reflect.Struct:
		checkObject(t, path, typ, s, defs, seen)
	case typ.Kind() == reflect.String:
		// enums and consts are strings by their values
		if e, ok := s["enum"]; ok {
			for _, v := range asSlice(e) {
				require.IsType(t, "", v, "%s: enum value", path)
			}
			return
		}
		if c, ok := s["const"]; ok {
			require.IsType(t, "", c, path)
			return
		}
		require.Equal(t, "string", s["type"], path)
	case typ.Kind() == reflect.Int64 || typ.Kind() == reflect.Int:
		require.Equal(t, "integer", s["type"], path)
	default:
		t.Fatalf("%s: Go type %s has no schema mapping in this test", path, typ)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// TestSchemaEnumsAreTheConstants: the schema's status, financial and
// fulfilment values are exactly the Go constants.
func TestSchemaEnumsAreTheConstants(t *testing.T) {
	var schema struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(order.SchemaJSON, &schema))
	for _, tc := range []struct {
		field string
		want  []string
	}{
		{"status", []string{order.StatusOpen, order.StatusCompleted, order.StatusCancelled, order.StatusUnknown}},
		{"financial_status", []string{order.FinancialPending, order.FinancialAuthorized, order.FinancialPaid, order.FinancialPartiallyPaid,
			order.FinancialPartiallyRefunded, order.FinancialRefunded, order.FinancialVoided, order.FinancialUnknown}},
		{"fulfillment_status", []string{order.FulfillmentUnfulfilled, order.FulfillmentPartial, order.FulfillmentFulfilled, order.FulfillmentUnknown}},
	} {
		require.ElementsMatch(t, tc.want, schema.Properties[tc.field].Enum, tc.field)
	}
}

// TestValidateCanonicalJSON: the schema takes a full order and refuses
// what a reader would trip over, each with the place named.
func TestValidateCanonicalJSON(t *testing.T) {
	full := order.Canonical{Schema: order.SchemaV1, Platform: "shop-eu", Kind: "woocommerce", OrderID: "727", Number: "727",
		CreatedAt: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		Status: order.StatusOpen, PlatformStatus: "processing", FinancialStatus: order.FinancialPaid, FulfillmentStatus: order.FulfillmentUnfulfilled,
		Currency: "USD", Totals: order.Totals{Subtotal: "12.00", Shipping: "10.00", Tax: "1.35", Discount: "0", Total: "29.35"},
		Taxes:          []order.Tax{{Title: "VAT", Rate: "0.2", Amount: "1.35"}},
		Discounts:      []order.Discount{{Code: "SPRING", Amount: "1.00"}},
		Shipping:       []order.ShippingLine{{Title: "Flat rate", Code: "flat_rate", Price: "10.00", Tax: "0"}},
		Customer:       &order.Customer{ID: "7", Email: "john.doe@example.com", Name: "John Doe"},
		BillingAddress: &order.Address{Name: "John Doe", Line1: "969 Market", City: "San Francisco", Region: "CA", PostalCode: "94103", CountryCode: "US"},
		Lines:          []order.CanonicalLine{{ID: "315", SKU: "W-1", Title: "Woo Single", Quantity: 2, UnitPrice: "6.00", Total: "12.00", Tax: "0.90"}},
		Tags:           []string{"vip"}, Note: "leave at the door"}
	doc, err := json.Marshal(full)
	require.NoError(t, err)
	require.NoError(t, order.ValidateCanonicalJSON(doc))

	minimal := order.Canonical{Schema: order.SchemaV1, Platform: "p", Kind: "sim", OrderID: "1", UpdatedAt: full.UpdatedAt,
		Status: order.StatusUnknown, Lines: []order.CanonicalLine{}}
	doc, err = json.Marshal(minimal)
	require.NoError(t, err)
	require.NoError(t, order.ValidateCanonicalJSON(doc))

	for _, tc := range []struct {
		name, doc, where string
	}{
		{"money as a number", `"totals":{"total":29.35}`, "/totals/total"},
		{"money with an exponent", `"totals":{"total":"1e3"}`, "/totals/total"},
		{"status outside the enum", `"status":"shipped"`, "/status"},
		{"financial status outside the enum", `"financial_status":"PAID"`, "/financial_status"},
		{"a time that is not date-time", `"updated_at":"2026-03-01 10:00"`, "/updated_at"},
		{"a property the schema does not have", `"raw":{}`, "raw"},
		{"a line without quantity", `"lines":[{"id":"1"}]`, "/lines/0"},
		{"a lower-case currency", `"currency":"usd"`, "/currency"},
		{"a country that is not alpha-2", `"shipping_address":{"country_code":"USA"}`, "/shipping_address/country_code"},
		{"the wrong schema version", `"schema":"https://ordersync.dev/schemas/order/v2.json"`, "/schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(doc, &m))
			var patch map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte("{"+tc.doc+"}"), &patch))
			for k, v := range patch {
				m[k] = v
			}
			bad, err := json.Marshal(m)
			require.NoError(t, err)
			err = order.ValidateCanonicalJSON(bad)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.where)
		})
	}
}

// BenchmarkValidateCanonicalJSON: the cost of checking one full canonical
// order against the schema (a receiver doing it per change).
func BenchmarkValidateCanonicalJSON(b *testing.B) {
	c := order.Canonical{Schema: order.SchemaV1, Platform: "shop", Kind: "woocommerce", OrderID: "727", Number: "727",
		UpdatedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Status: order.StatusOpen, FinancialStatus: order.FinancialPaid,
		Currency: "USD", Totals: order.Totals{Shipping: "10.00", Tax: "1.35", Total: "29.35"},
		Taxes:           []order.Tax{{Title: "State Tax", Amount: "1.35"}},
		Shipping:        []order.ShippingLine{{Title: "Flat Rate", Code: "flat_rate", Price: "10.00"}},
		Customer:        &order.Customer{Email: "john.doe@example.com", Name: "John Doe"},
		ShippingAddress: &order.Address{Name: "John Doe", Line1: "969 Market", City: "San Francisco", Region: "CA", PostalCode: "94103", CountryCode: "US"},
		Lines: []order.CanonicalLine{{ID: "315", Title: "Woo Single #1", Quantity: 2, UnitPrice: "3.00", Total: "6.00", Tax: "0.45"},
			{ID: "316", SKU: "Bar3", Title: "Ship Your Idea", Quantity: 1, UnitPrice: "12.00", Total: "12.00", Tax: "0.90"}}}
	doc, err := json.Marshal(c)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if err := order.ValidateCanonicalJSON(doc); err != nil {
			b.Fatal(err)
		}
	}
}
