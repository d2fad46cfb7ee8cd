package order

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaJSON is the JSON Schema (draft 2020-12) of the canonical order v1,
// order/schema/order.v1.json, whose $id is SchemaV1. Receivers can take it
// from the repository; TestSchemaMatchesCanonicalType keeps it and the
// Canonical type in step.
//
//go:embed schema/order.v1.json
var SchemaJSON []byte

var (
	schemaOnce     sync.Once
	schemaCompiled *jsonschema.Schema
	schemaErr      error
)

// schemaV1 compiles SchemaJSON once, with formats (date-time) asserted:
// the schema's "format" is only an annotation in draft 2020-12 unless the
// validator is asked to assert it.
func schemaV1() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
		if err != nil {
			schemaErr = fmt.Errorf("canonical order schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource(SchemaV1, doc); err != nil {
			schemaErr = fmt.Errorf("canonical order schema: %w", err)
			return
		}
		schemaCompiled, schemaErr = c.Compile(SchemaV1)
	})
	return schemaCompiled, schemaErr
}

// ValidateCanonicalJSON checks one canonical order, as JSON, against
// SchemaJSON; the error lists every place it does not conform.
func ValidateCanonicalJSON(doc []byte) error {
	sch, err := schemaV1()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("canonical order: not JSON: %w", err)
	}
	return sch.Validate(v)
}
