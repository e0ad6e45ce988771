package nic

// The package's tests run every NIC beside the scan it replaced (schedCheck).
func init() { schedCheck = true }
