// Package verify will hold the golden model of the AA semantics, seeded
// constrained-random stimulus, the scoreboard and coverage. It must never
// import a package that holds a cycle-level model, only format-only leaf
// packages, so that it cannot check the models against themselves. Nothing is
// implemented here yet.
package verify
