package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progressAfter is how long an operation runs before a terminal is told it
// is still at work; progressEvery is how often the line is brought up to
// date after that.
var (
	progressAfter = time.Second
	progressEvery = time.Second
)

// progress shows, on stderr when it is a terminal, that a long operation
// (verify, replay, publish, pull, search) is still at work: once it has run
// progressAfter, a line "editguard: LABEL... Ns" that it keeps up to date
// and erases when the returned function is called. Off a terminal it shows
// nothing, so logs and pipes get no carriage returns.
func (e *env) progress(label string) (done func()) {
	if !isTerminal(e.stderr) {
		return func() {}
	}
	return startProgress(e.stderr, label)
}

// startProgress draws the progress line on w until done is called.
func startProgress(w io.Writer, label string) (done func()) {
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wait := time.NewTimer(progressAfter)
		defer wait.Stop()
		drawn := false
		for {
			select {
			case <-stop:
				if drawn {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-wait.C:
				fmt.Fprintf(w, "\r\033[Keditguard: %s... %ds", label, int(time.Since(start).Seconds()))
				drawn = true
				wait.Reset(progressEvery)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
		})
	}
}
