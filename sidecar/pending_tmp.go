package sidecar

// TEMPORARY: replaced as warcio, cdxj, profiler and fixity land.

import (
	"context"
	"github.com/wayside-archive/wayside/cdxj"
	"log/slog"

	wayside "github.com/wayside-archive/wayside"
)

type LiveMap struct{}

func openLiveMap(cfg MapConfig, log *slog.Logger) (*LiveMap, error) { return &LiveMap{}, nil }
func (m *LiveMap) Close() error                                     { return nil }

func (s *Server) onCapture(ctx context.Context, c wayside.Capture) {}
func (s *Server) addMapRoutes()                                    {}
func parseCDXLine(text string) (cdxj.Line, error)                  { return cdxj.Line{}, nil }
