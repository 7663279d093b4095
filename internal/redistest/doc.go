// Package redistest starts a real Redis Cluster on loopback for tests:
// Debian's redis-server processes on free ports, masters with replicas
// (3 + 3 by default), append-only files synced on every write, and a short
// cluster-node-timeout so a failover completes in a few seconds.
//
// A Cluster can SIGKILL the master that owns a key and wait until one of
// its replicas has taken over, restart a killed node (it rejoins as a
// replica of the new master), stall a node (DEBUG SLEEP) to inject a
// replica that stops acknowledging writes, and wait until the cluster is
// healthy again (every slot served, every master with an in-sync replica).
// Close kills every process and removes the data directories; the
// processes also die with the test binary (Pdeathsig).
//
// Start needs no *testing.T so a package can share one cluster from
// TestMain; Require turns a missing redis-server into testenv.MissingTool
// (a failure when WAYSIDE_REQUIRE_TOOLS is set) and any other start error
// into a test failure.
package redistest
