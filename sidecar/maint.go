package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/captureindex"
	"github.com/wayside-archive/wayside/dedupindex"
)

// addMaintRoutes adds the index maintenance routes (token-checked: none
// is open or reachable with the CDX path token).
func (s *Server) addMaintRoutes() {
	s.add(&route{name: "index_scan", method: "POST", path: api.PathIndexScan, h: s.handleIndexScan})
	s.add(&route{name: "index_delete", method: "POST", path: api.PathIndexDelete, h: s.handleIndexDelete})
	s.add(&route{name: "index_update", method: "POST", path: api.PathIndexUpdate, h: s.handleIndexUpdate})
	s.add(&route{name: "captures_delete", method: "POST", path: api.PathCapturesDelete, h: s.handleCapturesDelete})
	s.add(&route{name: "captures_replace", method: "POST", path: api.PathCapturesReplace, maxBody: s.cfg.Limits.MaxCDXPostBytes, h: s.handleCapturesReplace})
}

func (s *Server) maintainer() (dedupindex.Maintainer, error) {
	m, err := dedupindex.AsMaintainer(s.idx)
	if err != nil {
		return nil, errorf(http.StatusNotImplemented, "%v", err)
	}
	return m, nil
}

func (s *Server) handleIndexScan(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var sel dedupindex.Selector
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &sel); err != nil {
		return err
	}
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	var n int64
	err = m.Scan(r.Context(), sel, func(e dedupindex.Entry) error {
		n++
		return enc.Encode(e)
	})
	if err != nil {
		// The status is sent: end without the final line, so the
		// client sees a cut stream.
		s.log.Warn("index scan", "err", err)
		bw.Flush()
		return nil
	}
	enc.Encode(api.ScanEnd{End: true, Count: n})
	return bw.Flush()
}

func (s *Server) handleIndexDelete(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	return s.deleteBySelector(w, r, func(ctx context.Context, sel dedupindex.Selector) (int64, error) {
		m, err := s.maintainer()
		if err != nil {
			return 0, err
		}
		return m.Delete(ctx, sel)
	})
}

// deleteBySelector decodes a dedupindex.Selector, runs del with it (an
// empty selector is the client's error, 400) and answers the count.
func (s *Server) deleteBySelector(w http.ResponseWriter, r *http.Request, del func(context.Context, dedupindex.Selector) (int64, error)) error {
	var sel dedupindex.Selector
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &sel); err != nil {
		return err
	}
	n, err := del(r.Context(), sel)
	if errors.Is(err, dedupindex.ErrEmptySelector) {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.DeleteResult{Deleted: n})
	return nil
}

// captures is the capture index in service, or a 404 naming why not.
func (s *Server) captures() (*captureindex.Index, error) {
	acc := s.acc()
	if acc == nil {
		return nil, errorf(http.StatusNotFound, "this daemon keeps no capture index (access.index is \"-\")")
	}
	return acc.idx, nil
}

func (s *Server) handleIndexUpdate(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in api.UpdateRequest
	if err := decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &in); err != nil {
		return err
	}
	if err := s.checkBatch(len(in.Moves), "moves"); err != nil {
		return err
	}
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	for i, mv := range in.Moves {
		if _, err := dedupindex.CheckOriginal(mv.Key, mv.To); err != nil {
			return errorf(http.StatusBadRequest, "moves[%d]: %v", i, err)
		}
	}
	n, err := m.Update(r.Context(), in.Moves)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.UpdateResult{Updated: n})
	return nil
}

func (s *Server) handleCapturesDelete(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	return s.deleteBySelector(w, r, func(ctx context.Context, sel dedupindex.Selector) (int64, error) {
		ix, err := s.captures()
		if err != nil {
			return 0, err
		}
		return ix.Delete(ctx, sel)
	})
}

func (s *Server) handleCapturesReplace(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	var in api.ReplaceFilesRequest
	if err := decodeJSON(w, r, s.cfg.Limits.MaxCDXPostBytes, &in); err != nil {
		return err
	}
	ix, err := s.captures()
	if err != nil {
		return err
	}
	removed, added, err := ix.ReplaceFiles(r.Context(), in.Files)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ReplaceFilesResult{Removed: removed, Added: added})
	return nil
}
