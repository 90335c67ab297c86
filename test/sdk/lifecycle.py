#!/usr/bin/python3
"""openstacksdk lifecycle against an Octavia-compatible endpoint.

usage: OS_CLIENT_CONFIG_FILE=clouds.yaml /usr/bin/python3 lifecycle.py CLOUD VIP_SUBNET_ID MEMBER_SUBNET_ID

Creates, reads, lists, updates and deletes a load balancer, listener, pool, two members and a
health monitor, waiting on provisioning_status after every change the way SDK users do. Prints
one JSON object of named snapshots on stdout for the calling test to assert; any SDK exception
ends the run with a non-zero exit and the traceback on stderr.
"""
import json
import sys

import openstack
from openstack import resource

WAIT_S = 60
POLL_S = 0.2

cloud, vip_subnet_id, member_subnet_id = sys.argv[1:4]
conn = openstack.connect(cloud=cloud)
lbaas = conn.load_balancer
out = {}


def snap(obj):
    """The resource as a dict keyed by wire names (admin_state_up, healthmonitor_id, ...)."""
    return obj.to_dict(computed=False, original_names=True)


def listing(key, query):
    """Runs a list query; a refusal is recorded, not fatal, so the lifecycle still completes."""
    try:
        out[key] = [x.id for x in query()]
    except openstack.exceptions.SDKException as e:
        out[key] = {'error': str(e)}


def active(obj):
    return resource.wait_for_status(lbaas, obj, 'ACTIVE', ['ERROR'], POLL_S, WAIT_S,
                                    attribute='provisioning_status')


def lb_active(lb_id):
    return lbaas.wait_for_load_balancer(lb_id, interval=POLL_S, wait=WAIT_S)


lb = lbaas.create_load_balancer(name='sdk-lb', description='made by openstacksdk',
                                vip_subnet_id=vip_subnet_id, tags=['sdk'])
out['lb_created'] = snap(lb)
lb = lb_active(lb.id)
out['lb_active'] = snap(lb)
out['lb_get'] = snap(lbaas.get_load_balancer(lb.id))
out['lb_find'] = snap(lbaas.find_load_balancer('sdk-lb'))
listing('lb_list_ids', lambda: lbaas.load_balancers(name='sdk-lb'))
lbaas.update_load_balancer(lb, description='updated by openstacksdk', tags=['sdk', 'v2'])
out['lb_updated'] = snap(lb_active(lb.id))

listener = lbaas.create_listener(name='sdk-listener', loadbalancer_id=lb.id,
                                 protocol='HTTP', protocol_port=8080, connection_limit=500)
out['listener_created'] = snap(listener)
listener = active(listener)
lb_active(lb.id)
listing('listener_list_ids', lambda: lbaas.listeners(load_balancer_id=lb.id))
lbaas.update_listener(listener, connection_limit=1000, description='sdk listener')
lb_active(lb.id)
out['listener_updated'] = snap(lbaas.get_listener(listener.id))

pool = lbaas.create_pool(name='sdk-pool', listener_id=listener.id, protocol='HTTP',
                         lb_algorithm='ROUND_ROBIN',
                         session_persistence={'type': 'HTTP_COOKIE'})
out['pool_created'] = snap(pool)
pool = active(pool)
lb_active(lb.id)
listing('pool_list_ids', lambda: lbaas.pools(loadbalancer_id=lb.id))
lbaas.update_pool(pool, lb_algorithm='SOURCE_IP', name='sdk-pool-2')
lb_active(lb.id)
out['pool_updated'] = snap(lbaas.get_pool(pool.id))

members = []
for address in ('127.32.0.41', '127.32.0.42'):
    m = lbaas.create_member(pool, address=address, protocol_port=80,
                            subnet_id=member_subnet_id, weight=3)
    lb_active(lb.id)
    members.append(m)
out['member_created'] = snap(members[0])
out['member_get'] = snap(lbaas.get_member(members[0].id, pool.id))
out['member_list'] = sorted(x.address for x in lbaas.members(pool.id))
lbaas.update_member(members[0], pool.id, weight=7, name='sdk-member')
lb_active(lb.id)
out['member_updated'] = snap(lbaas.get_member(members[0].id, pool.id))

hm = lbaas.create_health_monitor(pool_id=pool.id, type='HTTP', delay=5, timeout=3,
                                 max_retries=2, url_path='/health', name='sdk-hm')
out['hm_created'] = snap(hm)
lb_active(lb.id)
out['hm_get'] = snap(lbaas.get_health_monitor(hm.id))
listing('hm_list_ids', lambda: lbaas.health_monitors(pool_id=pool.id))
lbaas.update_health_monitor(hm, delay=9, expected_codes='200-299')
lb_active(lb.id)
out['hm_updated'] = snap(lbaas.get_health_monitor(hm.id))
out['pool_with_children'] = snap(lbaas.get_pool(pool.id))
out['listener_with_pool'] = snap(lbaas.get_listener(listener.id))
out['lb_with_children'] = snap(lbaas.get_load_balancer(lb.id))
out['lb_stats'] = snap(lbaas.get_load_balancer_statistics(lb.id))

lbaas.delete_health_monitor(hm, ignore_missing=False)
lb_active(lb.id)
out['hm_after_delete'] = lbaas.find_health_monitor(hm.id) is None
lbaas.delete_member(members[1], pool.id, ignore_missing=False)
lb_active(lb.id)
listing('member_list_after_delete', lambda: lbaas.members(pool.id))
lbaas.delete_pool(pool, ignore_missing=False)
lb_active(lb.id)
out['pool_after_delete'] = lbaas.find_pool(pool.id) is None
lbaas.delete_listener(listener, ignore_missing=False)
lb_active(lb.id)
out['listener_after_delete'] = lbaas.find_listener(listener.id) is None

lbaas.delete_load_balancer(lb, ignore_missing=False, cascade=True)
resource.wait_for_delete(lbaas, lb, POLL_S, WAIT_S)
out['lb_after_delete'] = lbaas.find_load_balancer(lb.id) is None

print(json.dumps(out, sort_keys=True))
