package adaptive

import (
	"fmt"

	"github.com/tollgate-go/tollgate/quota"
)

func tenantKey(i int) quota.Key {
	return quota.Key{Product: "ecs", Region: "cn-hangzhou", Account: fmt.Sprint(1000000 + i)}
}
