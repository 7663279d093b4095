package api

// Format migration routes (package migrate).
const (
	// PathMigrateRisk (GET[?threshold=X]): the risk registry with every
	// format's risk value (MigrateRisk).
	PathMigrateRisk = "/v1/migrate/risk"
	// PathMigrate: POST a MigrateRequest to start a migration job on the
	// collection (202 with its MigrateJob; 409 while one runs); GET lists
	// the jobs, newest first (MigrateJobs; ?id=ID for one).
	PathMigrate = "/v1/migrate"
)

// MigrateRisk is the risk registry as the daemon applies it.
type MigrateRisk struct {
	// Threshold is the one asked for (default 0.5): AtRisk tells which
	// formats reach it.
	Threshold float64             `json:"threshold"`
	Questions []MigrateQuestion   `json:"questions"`
	Formats   []MigrateRiskFormat `json:"formats"`
}

// MigrateQuestion is one risk question and its weight.
type MigrateQuestion struct {
	ID     string  `json:"id"`
	Text   string  `json:"text"`
	Weight float64 `json:"weight"`
}

// MigrateRiskFormat is one format of the registry, riskiest first.
type MigrateRiskFormat struct {
	PUID   string  `json:"puid"`
	Name   string  `json:"name"`
	Risk   float64 `json:"risk"`
	AtRisk bool    `json:"at_risk"`
}

// MigrateRequest starts a migration job: the formats of PUIDs, or those at
// RiskThreshold or more (default 0.5), in Files (WARC file names of the
// collection; default every characterized file), written in Workflow
// ("conversion", the default, or "replace").
type MigrateRequest struct {
	PUIDs         []string `json:"puids,omitempty"`
	RiskThreshold *float64 `json:"risk_threshold,omitempty"`
	Workflow      string   `json:"workflow,omitempty"`
	Files         []string `json:"files,omitempty"`
}

// Migration job states.
const (
	MigrateRunning = "running"
	MigrateDone    = "done"   // every located object migrated
	MigrateFailed  = "failed" // Error says why, or objects were not migrated (Problems)
)

// MigrateJob is a migration job's status.
type MigrateJob struct {
	ID       string   `json:"id"`
	State    string   `json:"state"`
	Started  string   `json:"started"`
	Finished string   `json:"finished,omitempty"`
	Workflow string   `json:"workflow"`
	PUIDs    []string `json:"puids"`
	Files    int      `json:"files"`
	// Located is the number of objects of the selected formats found
	// through the characterization store; Counts their outcomes by status
	// (migrated, failed, no-pathway, nested).
	Located int            `json:"located"`
	Counts  map[string]int `json:"counts,omitempty"`
	// OutDir holds the outputs (under the data directory); Outputs are
	// the files written, each with its CDXJ index beside it.
	OutDir  string   `json:"out_dir"`
	Outputs []string `json:"outputs,omitempty"`
	// Problems name the objects not migrated (at most 100).
	Problems []string `json:"problems,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// MigrateJobs lists jobs, newest first.
type MigrateJobs struct {
	Jobs []MigrateJob `json:"jobs"`
}
