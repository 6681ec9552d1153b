package price

import (
	"encoding/json"
	"testing"
)

// A cost's JSON has usd only when known: an unknown cost says why, with
// at_least_usd when the known part of a sum costs something, and never a
// usd of 0.
func TestACostsJSONHasUSDOnlyWhenKnown(t *testing.T) {
	for _, c := range []struct {
		cost Cost
		want string
	}{
		{Cost{Dollars: 0.0171, Known: true}, `{"usd":0.0171,"known":true}`},
		{Cost{Known: true}, `{"usd":0,"known":true}`},
		{Cost{Why: "model x not in the price table"}, `{"known":false,"why":"model x not in the price table"}`},
		{Sum(Cost{Dollars: 0.5, Known: true}, Cost{Why: "model x not in the price table"}), `{"at_least_usd":0.5,"known":false,"why":"model x not in the price table"}`},
	} {
		b, err := json.Marshal(c.cost.JSON())
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("the JSON of %+v is %s, want %s", c.cost, b, c.want)
		}
	}
}
