package eval

import (
	"context"
	"sync"
)

// fanOut runs work(i, local) for every i below n on workers goroutines.
// Each worker keeps its own local state, made by newLocal, and hands it to
// merge, one worker at a time, when the cases run out. It stops handing out
// cases once ctx is done, and returns the first error by case order
// (cmpErr) or ctx's error.
func fanOut[L any](ctx context.Context, n, workers int, newLocal func() L, work func(i int, local L) error, merge func(local L)) error {
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := newLocal()
			for i := range next {
				if err := work(i, local); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			merge(local)
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
