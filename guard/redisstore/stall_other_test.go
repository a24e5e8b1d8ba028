//go:build !unix

package redisstore_test

import (
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"github.com/toolguard/toolguard/guard/storetest"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// Without SIGSTOP there is no stall: the kits skip those checks.
func storeStall(...*redisserver.Server) storetest.Option           { return nil }
func checkpointStall(...*redisserver.Server) checkpointtest.Option { return nil }
