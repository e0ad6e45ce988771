// Package aa will hold the Active Access programming interface (Put, Get,
// AssocPage, Flush, plain RMA), node and cluster assembly, the compared
// schemes and the paper's workloads. Nothing is implemented here yet.
package aa
