package characterize

import (
	"errors"
	"fmt"
	"reflect"

	memdb "github.com/hashicorp/go-memdb"
)

// Check verifies the store's invariants: the aggregates and file summaries
// equal what the records add up to, and no revisit is unresolved while a
// characterized original with its digest is stored. Tests run it in their
// cleanup.
func (s *Store) Check() error {
	txn := s.db.Txn(false)
	// Recompute from the records alone, in a scratch database.
	scratch, err := memdb.NewMemDB(schema())
	if err != nil {
		return err
	}
	wtx := scratch.Txn(true)
	it, err := txn.Get(tabRecords, "id")
	if err != nil {
		return err
	}
	var errs []error
	for o := it.Next(); o != nil; o = it.Next() {
		r := o.(*Record)
		if err := account(wtx, r, +1); err != nil {
			return err
		}
		if r.IsRevisit() {
			// Its inheritance is what resolve gives against the
			// originals stored (whatever order they arrived in).
			c := *r
			if err := resolve(txn, &c); err != nil {
				return err
			}
			if c.Original != r.Original || c.Unresolved != r.Unresolved {
				errs = append(errs, fmt.Errorf("revisit %s %d inherits from %q (unresolved %v), but its original is %q (unresolved %v)",
					r.File, r.Offset, r.Original, r.Unresolved, c.Original, c.Unresolved))
			}
		}
		if !r.IsRevisit() && (r.Unresolved || r.Original != "") {
			errs = append(errs, fmt.Errorf("record %s %d is not a revisit but carries inheritance", r.File, r.Offset))
		}
	}
	fit, err := txn.Get(tabFiles, "id")
	if err != nil {
		return err
	}
	for o := fit.Next(); o != nil; o = fit.Next() {
		if f := o.(*FileSummary); f.ScannedSize != 0 {
			g, _ := fileRow(wtx, f.File)
			g.ScannedSize = f.ScannedSize
			if err := wtx.Insert(tabFiles, g); err != nil {
				return err
			}
		}
	}
	wtx.Commit()
	want := scratch.Txn(false)
	for _, tab := range []string{tabAggs, tabFiles} {
		if err := sameTable(txn, want, tab); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func sameTable(got, want *memdb.Txn, tab string) error {
	a, b := rows(got, tab), rows(want, tab)
	if len(a) != len(b) {
		return fmt.Errorf("%s: %d rows, the records add up to %d", tab, len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			return fmt.Errorf("%s: row %+v, the records add up to %+v", tab, a[i], b[i])
		}
	}
	return nil
}

func rows(txn *memdb.Txn, tab string) []any {
	it, err := txn.Get(tab, "id")
	if err != nil {
		return nil
	}
	var out []any
	for o := it.Next(); o != nil; o = it.Next() {
		out = append(out, o)
	}
	return out
}
