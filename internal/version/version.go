// Package version holds aaemu's version string.
package version

// Version is aaemu's version; release builds may set it with
// -ldflags "-X github.com/aaemu/aaemu/internal/version.Version=v1.2.3".
var Version = "0.1.0-dev"
