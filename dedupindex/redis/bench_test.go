package redis_test

// benchChildEnv marks a process started by the claims benchmark as one of
// its clients.
const benchChildEnv = "WAYSIDE_REDIS_BENCH_CHILD"
