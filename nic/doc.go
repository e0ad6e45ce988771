// Package nic will hold the RDMA NIC (queue pairs, doorbells, DMA, RoCEv2
// frames, reliable connection) and the network links and switch. Nothing is
// implemented here yet.
package nic
