package machine

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// pluginInfoTTL is how long a driver's GetPluginInfo answer is trusted: a
// driver upgraded in place may start implementing a method.
const pluginInfoTTL = 10 * time.Minute

// pluginInfos remembers, per provider, which optional methods its driver
// says it implements (GetPluginInfo), so that a method it lacks is not
// called at all; and the class changes already announced as not applied
// (see hotUpdate), so that each is said once.
type pluginInfos struct {
	mu        sync.Mutex
	m         map[string]pluginInfo
	announced map[types.UID]int64
}

type pluginInfo struct {
	implements []driver.Method
	at         time.Time
}

// lacks reports whether the driver of provider says it does not implement
// method; false when it cannot tell (GetPluginInfo failed, or took longer
// than timeout: a hung driver must not hold a worker): the method is then
// called, and its answer decides.
func (p *pluginInfos) lacks(ctx context.Context, provider string, drv driver.Driver, method driver.Method, now time.Time, timeout time.Duration) bool {
	p.mu.Lock()
	info, ok := p.m[provider]
	p.mu.Unlock()
	if !ok || now.Sub(info.at) >= pluginInfoTTL {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		resp, err := drv.GetPluginInfo(ctx, &driver.GetPluginInfoRequest{})
		if err != nil {
			return false
		}
		info = pluginInfo{implements: resp.Implements, at: now}
		p.mu.Lock()
		if p.m == nil {
			p.m = map[string]pluginInfo{}
		}
		p.m[provider] = info
		p.mu.Unlock()
	}
	return !slices.Contains(info.implements, method)
}

// announce reports whether the change of class uid to generation is yet
// to be announced, and notes that it is.
func (p *pluginInfos) announce(uid types.UID, generation int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.announced == nil {
		p.announced = map[types.UID]int64{}
	}
	if p.announced[uid] == generation {
		return false
	}
	p.announced[uid] = generation
	return true
}
