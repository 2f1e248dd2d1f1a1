// Package layering holds no code: its test states which of agentmux's packages may
// import which, and fails on an import that crosses the layers (`go list` of the
// module). A new package is added to the test's table on purpose, with its layer.
package layering
