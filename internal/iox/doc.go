// Package iox holds small io helpers shared across the project's packages:
// counting readers and writers.
package iox
