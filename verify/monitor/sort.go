package monitor

import (
	"cmp"
	"slices"
)

func sortRequests(r []*request) {
	slices.SortFunc(r, func(a, b *request) int {
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.t.RequesterID, b.t.RequesterID), cmp.Compare(a.t.Tag, b.t.Tag))
	})
}
