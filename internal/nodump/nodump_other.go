//go:build !linux && !darwin

package nodump

import "errors"

// Apply says that this system offers no way to keep the user's processes out.
func Apply() error {
	return errors.New("nodump: this system offers no way to keep the user's other processes out")
}
