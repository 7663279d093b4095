package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/dedupindex"
	"github.com/wayside-archive/wayside/digest"
	"github.com/wayside-archive/wayside/warcio"
)

func (s *Server) addDedupRoutes() {
	s.add(&route{name: "lookup", method: "GET", path: api.PathLookup, h: s.handleLookupGet})
	s.add(&route{name: "lookup", method: "POST", path: api.PathLookup, h: keyHandler(s, s.lookup)})
	s.add(&route{name: "lookup_batch", method: "POST", path: api.PathLookupBatch, h: s.handleLookupBatch})
	s.add(&route{name: "claim", method: "POST", path: api.PathClaim, h: keyHandler(s, s.claim)})
	s.add(&route{name: "claim_batch", method: "POST", path: api.PathClaimBatch, h: s.handleClaimBatch})
	s.add(&route{name: "commit", method: "POST", path: api.PathCommit, h: s.handleCommit})
	s.add(&route{name: "commit_batch", method: "POST", path: api.PathCommitBatch, h: s.handleCommitBatch})
	s.add(&route{name: "cancel", method: "POST", path: api.PathCancel, h: s.handleCancel})
	s.add(&route{name: "cancel_batch", method: "POST", path: api.PathCancelBatch, h: s.handleCancelBatch})
}

// indexKey validates an API key and converts it; field names the key in
// errors ("keys[3]").
func (s *Server) indexKey(k api.Key, field string) (dedupindex.Key, error) {
	if k.Digest == "" {
		return dedupindex.Key{}, errorf(http.StatusBadRequest, "%sdigest: missing", prefix(field))
	}
	d, err := digest.Normalize(k.Digest)
	if err != nil {
		return dedupindex.Key{}, errorf(http.StatusBadRequest, "%sdigest: %v", prefix(field), err)
	}
	scope := k.Scope
	if scope == "" {
		scope = s.cfg.Index.Scope
	}
	u := k.URL
	if u == "" && k.TargetURI != "" {
		u = dedupindex.URLKey(k.TargetURI)
	} else if u != "" && k.TargetURI != "" {
		return dedupindex.Key{}, errorf(http.StatusBadRequest, "%sgive url (a by-URL key) or target_uri, not both", prefix(field))
	}
	return dedupindex.Key{Scope: scope, Digest: d, URL: u}, nil
}

func prefix(field string) string {
	if field == "" {
		return ""
	}
	return field + "."
}

func (s *Server) checkBatch(n int, what string) error {
	if n == 0 {
		return errorf(http.StatusBadRequest, "%s: empty batch", what)
	}
	if n > s.cfg.Limits.MaxBatch {
		return errorf(http.StatusRequestEntityTooLarge, "%s: batch of %d exceeds limits.max_batch (%d)", what, n, s.cfg.Limits.MaxBatch)
	}
	return nil
}

func (s *Server) lookup(ctx context.Context, k dedupindex.Key) (api.LookupResult, error) {
	defer s.metrics.observeIndex("lookup", time.Now())
	o, ok, err := s.idx.Lookup(ctx, k)
	if err != nil {
		return api.LookupResult{}, err
	}
	s.metrics.Lookups.Add(1)
	if !ok {
		return api.LookupResult{}, nil
	}
	s.metrics.LookupHits.Add(1)
	return api.LookupResult{Found: true, Original: &o}, nil
}

func (s *Server) handleLookupGet(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	k, err := s.indexKey(lookupKeyFromQuery(r), "")
	if err != nil {
		return err
	}
	res, err := s.lookup(r.Context(), k)
	if err != nil {
		return err
	}
	writeLookupResult(w, res)
	return nil
}

// keyHandler serves a single-key POST (lookup, claim): it decodes and
// validates an api.Key, runs op on it and answers op's result.
func keyHandler[R any](s *Server, op func(context.Context, dedupindex.Key) (R, error)) func(http.ResponseWriter, *http.Request, *reqInfo) error {
	return func(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
		var in api.Key
		if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
			return err
		}
		k, err := s.indexKey(in, "")
		if err != nil {
			return err
		}
		res, err := op(r.Context(), k)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, res)
		return nil
	}
}

// decodeKeys reads a batch request ({"keys": [...]}) and validates every
// key, naming the first bad one ("keys[3].digest: ...").
func (s *Server) decodeKeys(w http.ResponseWriter, r *http.Request) ([]dedupindex.Key, error) {
	var in api.KeysRequest
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
		return nil, err
	}
	if err := s.checkBatch(len(in.Keys), "keys"); err != nil {
		return nil, err
	}
	keys := make([]dedupindex.Key, len(in.Keys))
	for i, k := range in.Keys {
		var err error
		if keys[i], err = s.indexKey(k, fmt.Sprintf("keys[%d]", i)); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func (s *Server) handleLookupBatch(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	keys, err := s.decodeKeys(w, r)
	if err != nil {
		return err
	}
	out := api.LookupResults{Results: make([]api.LookupResult, len(keys))}
	for i, k := range keys {
		res, err := s.lookup(r.Context(), k)
		if err != nil {
			return err
		}
		out.Results[i] = res
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) claim(ctx context.Context, k dedupindex.Key) (api.ClaimResult, error) {
	defer s.metrics.observeIndex("claim", time.Now())
	cr, err := s.idx.Claim(ctx, k)
	if err != nil {
		if errors.Is(err, dedupindex.ErrReadOnly) {
			return api.ClaimResult{}, errorf(http.StatusForbidden, "scope %q: %v", k.Scope, err)
		}
		return api.ClaimResult{}, err
	}
	s.metrics.Claims.Add(1)
	out := api.ClaimResult{State: cr.State.String()}
	switch cr.State {
	case dedupindex.Claimed:
		s.metrics.ClaimsClaimed.Add(1)
		t := cr.Ticket
		s.leases.add(t)
		out.Ticket = &t
	case dedupindex.Duplicate:
		s.metrics.ClaimsDuplicate.Add(1)
		s.metrics.Revisits.Add(1)
		s.metrics.BytesSaved.Add(cr.Original.PayloadLength)
		o := cr.Original
		out.Original = &o
	case dedupindex.Pending:
		s.metrics.ClaimsPending.Add(1)
	}
	return out, nil
}

func (s *Server) handleClaimBatch(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	keys, err := s.decodeKeys(w, r)
	if err != nil {
		return err
	}
	out := api.ClaimResults{Results: make([]api.ClaimResult, len(keys))}
	for i, k := range keys {
		res, err := s.claim(r.Context(), k)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				// Claims already made stay valid: the caller gets them and an
				// error for the rest, never a silent drop.
				out.Results[i] = api.ClaimResult{Error: err.Error()}
				for j := i + 1; j < len(keys); j++ {
					out.Results[j] = api.ClaimResult{Error: "not attempted: " + err.Error()}
				}
				break
			}
			out.Results[i] = api.ClaimResult{Error: ae.msg}
			continue
		}
		out.Results[i] = res
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// checkCommit validates a commit: the original must describe a durable
// record (record id, target URI, date, file) whose digest is the claimed one.
func checkCommit(c api.Commit, field string) (api.Commit, error) {
	p := prefix(field)
	if c.Ticket.Token == "" {
		return c, errorf(http.StatusBadRequest, "%sticket: missing or has no token", p)
	}
	o := &c.Original
	if o.Digest == "" {
		o.Digest = c.Ticket.Key.Digest
	}
	od, err := digest.Normalize(o.Digest)
	if err != nil {
		return c, errorf(http.StatusBadRequest, "%soriginal.digest: %v", p, err)
	}
	kd, err := digest.Normalize(c.Ticket.Key.Digest)
	if err != nil {
		return c, errorf(http.StatusBadRequest, "%sticket.key.digest: %v", p, err)
	}
	if od != kd {
		return c, errorf(http.StatusBadRequest, "%soriginal.digest %s differs from the claimed digest %s", p, od, kd)
	}
	o.Digest = od
	var missing []string
	if o.RecordID == "" {
		missing = append(missing, "record_id")
	}
	if o.TargetURI == "" {
		missing = append(missing, "target_uri")
	}
	if o.Date.IsZero() {
		missing = append(missing, "date")
	}
	if o.File == "" {
		missing = append(missing, "file")
	}
	if len(missing) > 0 {
		return c, errorf(http.StatusBadRequest, "%soriginal: missing %s (a commit describes a durably written record)", p, strings.Join(missing, ", "))
	}
	if err := warcio.CheckFileName(o.File); err != nil {
		return c, errorf(http.StatusBadRequest, "%soriginal.file: %v", p, err)
	}
	if o.Offset < 0 || o.Length < 0 || o.PayloadLength < 0 {
		return c, errorf(http.StatusBadRequest, "%soriginal: negative offset or length", p)
	}
	return c, nil
}

func (s *Server) commit(ctx context.Context, c api.Commit) error {
	// After any Commit error the claim is gone (dedupindex contract).
	defer s.leases.done(c.Ticket)
	defer s.metrics.observeIndex("commit", time.Now())
	if err := s.idx.Commit(ctx, c.Ticket, c.Original); err != nil {
		if errors.Is(err, dedupindex.ErrNoClaim) {
			return errorf(http.StatusConflict, "%v", err)
		}
		return err
	}
	s.metrics.Commits.Add(1)
	return nil
}

func (s *Server) cancel(ctx context.Context, t dedupindex.Ticket) error {
	if t.Token == "" {
		return errorf(http.StatusBadRequest, "ticket: missing or has no token")
	}
	defer s.leases.done(t)
	defer s.metrics.observeIndex("cancel", time.Now())
	if err := s.idx.Cancel(ctx, t); err != nil {
		if errors.Is(err, dedupindex.ErrNoClaim) {
			return errorf(http.StatusConflict, "%v", err)
		}
		return err
	}
	s.metrics.Cancels.Add(1)
	return nil
}

func (s *Server) handleCommit(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in api.Commit
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
		return err
	}
	c, err := checkCommit(in, "")
	if err != nil {
		return err
	}
	if err := s.commit(r.Context(), c); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.OpResult{OK: true, Code: http.StatusOK})
	return nil
}

func opResult(err error) api.OpResult {
	if err == nil {
		return api.OpResult{OK: true, Code: http.StatusOK}
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return api.OpResult{Code: ae.code, Error: ae.msg}
	}
	return api.OpResult{Code: http.StatusInternalServerError, Error: err.Error()}
}

func (s *Server) handleCommitBatch(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in api.CommitsRequest
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
		return err
	}
	if err := s.checkBatch(len(in.Commits), "commits"); err != nil {
		return err
	}
	for i := range in.Commits {
		c, err := checkCommit(in.Commits[i], fmt.Sprintf("commits[%d]", i))
		if err != nil {
			return err
		}
		in.Commits[i] = c
	}
	out := api.OpResults{Results: make([]api.OpResult, len(in.Commits))}
	for i, c := range in.Commits {
		out.Results[i] = opResult(s.commit(r.Context(), c))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in api.Cancel
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
		return err
	}
	if err := s.cancel(r.Context(), in.Ticket); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.OpResult{OK: true, Code: http.StatusOK})
	return nil
}

func (s *Server) handleCancelBatch(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in api.CancelsRequest
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
		return err
	}
	if err := s.checkBatch(len(in.Tickets), "tickets"); err != nil {
		return err
	}
	out := api.OpResults{Results: make([]api.OpResult, len(in.Tickets))}
	for i, t := range in.Tickets {
		out.Results[i] = opResult(s.cancel(r.Context(), t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) addIndexRoutes() {
	s.add(&route{name: "put", method: "POST", path: api.PathPut, h: s.handlePut})
	s.add(&route{name: "byurl", method: "GET", path: api.PathByURL, h: s.handleByURL})
}

func (s *Server) handlePut(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in api.PutRequest
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
		return err
	}
	if err := s.checkBatch(len(in.Entries), "entries"); err != nil {
		return err
	}
	for i := range in.Entries {
		e := &in.Entries[i]
		field := fmt.Sprintf("entries[%d].key", i)
		k, err := s.indexKey(api.Key{Scope: e.Key.Scope, Digest: e.Key.Digest, URL: e.Key.URL}, field)
		if err != nil {
			return err
		}
		e.Key = k
		if _, err := dedupindex.CheckOriginal(k, e.Original); err != nil {
			return errorf(http.StatusBadRequest, "entries[%d].original: %v", i, err)
		}
		if e.Original.File != "" {
			if err := warcio.CheckFileName(e.Original.File); err != nil {
				return errorf(http.StatusBadRequest, "entries[%d].original.file: %v", i, err)
			}
		}
	}
	start := time.Now()
	added, err := dedupindex.PutEntries(r.Context(), s.idx, in.Entries)
	s.metrics.observeIndex("put", start)
	if err != nil {
		if errors.Is(err, dedupindex.ErrReadOnly) {
			return errorf(http.StatusForbidden, "%v", err)
		}
		return err
	}
	writeJSON(w, http.StatusOK, api.PutResult{Added: added})
	return nil
}

func (s *Server) handleByURL(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	q := r.URL.Query()
	key := q.Get("url")
	if key == "" {
		return errorf(http.StatusBadRequest, "url: missing (a by-URL key, see dedupindex.URLKey)")
	}
	scope := q.Get("scope")
	if scope == "" {
		scope = s.cfg.Index.Scope
	}
	origs, err := s.idx.ByURL(r.Context(), scope, key)
	if err != nil {
		return err
	}
	if origs == nil {
		origs = []dedupindex.Original{}
	}
	writeJSON(w, http.StatusOK, api.ByURLResult{Originals: origs})
	return nil
}
