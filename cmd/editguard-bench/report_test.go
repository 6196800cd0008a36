package main

import (
	"bytes"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	tests := []struct {
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 0.5, 2500 * time.Microsecond},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.9, 9 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 0.9, 10 * time.Millisecond},
		{ms(5), 0.9, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.ds, tt.p); got != tt.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tt.ds, tt.p, got, tt.want)
		}
	}
}

func TestBenchContent(t *testing.T) {
	for _, size := range []int{4 << 10, 1 << 20} {
		b := benchContent(size)
		if len(b) != size {
			t.Errorf("len(benchContent(%d)) = %d, want %d", size, len(b), size)
		}
		if n := bytes.Count(b, []byte(markerA)); n != 1 {
			t.Errorf("benchContent(%d) holds %s %d times, want once", size, markerA, n)
		}
		if bytes.Contains(b, []byte(markerB)) {
			t.Errorf("benchContent(%d) holds %s", size, markerB)
		}
		if b[len(b)-1] != '\n' {
			t.Errorf("benchContent(%d) does not end in a newline", size)
		}
	}
}
