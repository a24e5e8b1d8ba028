package redisstore

import "time"

// ReplayWindow is how long the store remembers a reserve, release or save
// it ran, by the request id the command carries: a copy of the command
// that reaches the server within that time — the client's retry of a
// command whose reply timed out, or one that waited in a frozen server's
// socket — returns the first run's reply and changes nothing. Each such
// command leaves a record of about 120 bytes (<prefix>{<thread>}:req:<id>)
// for that long. A client's retries all come within seconds (go-redis:
// MaxRetries times ReadTimeout and a backoff), well inside it.
const ReplayWindow = 10 * time.Minute
