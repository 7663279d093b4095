package postdedup

// Memory budget of the pipeline's stages (ManifestOptions.MaxMemory and
// the MaxMemory of the other stages' options): every buffer that could
// grow with the input is bounded by a share of it, so the process's size
// is the same for a small input and a large one.

// sortShare is the share of MaxMemory one sort holds in memory before it
// spills a sorted run to the temporary directory. Sorts read their runs
// back merged, so a small share costs a little more I/O, not memory that
// grows with the input: with an eighth, a manifest sort did not fill its
// share below ~1 GB of input and the stage's heap grew by half from 409 MB
// to 1.6 GB of input.
const sortShare = 32

// sortMemory returns the memory of one of n sorts running at once within
// maxMem (at least 1 MiB).
func sortMemory(maxMem int64, n int) int64 {
	return max(maxMem/sortShare/int64(max(n, 1)), 1<<20)
}

// loadShare is the share of MaxMemory resolve may hold in reference
// payloads loaded for one cluster; a larger payload is streamed from its
// record for each comparison instead.
const loadShare = 8

// loadMemory returns the bytes of reference payloads resolve holds for
// one cluster within maxMem (default 256 MiB, at least 1 MiB).
func loadMemory(maxMem int64) int64 {
	if maxMem <= 0 {
		maxMem = 256 << 20
	}
	return max(maxMem/loadShare, 1<<20)
}
