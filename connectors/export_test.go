package connectors

// Internals the external tests (package connectors_test) check directly.
const MaxResponseBody = maxResponseBody

var (
	CeilTime            = ceilTime
	LastInstantBefore   = lastInstantBefore
	NextLink            = relNextLink
	ParseRetryAfter     = parseRetryAfter
	ErrorMessage        = errorMessage
	DecodeArrayField    = decodeArrayField
	ShopifySearchWindow = shopifySearchWindow
)
