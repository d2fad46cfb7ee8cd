package searchattr

import (
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
)

func TestAllNamesEveryKeyWithItsType(t *testing.T) {
	want := map[string]enumspb.IndexedValueType{
		"Platform":      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"SliceStart":    enumspb.INDEXED_VALUE_TYPE_DATETIME,
		"SliceState":    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"PlatformState": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
	got := map[string]enumspb.IndexedValueType{}
	for _, d := range All {
		_, dup := got[d.Name]
		require.False(t, dup, "%s listed twice", d.Name)
		got[d.Name] = d.Type
	}
	require.Equal(t, want, got)
}
