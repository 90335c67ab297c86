"""Runs `openstack` commands one after another in one Python process, for the tests.

The `openstack` entry point is `sys.exit(openstackclient.shell.main())`, and `main` is
`OpenStackShell().run(argv)`: this does the same per command, with a fresh shell each time and its
output captured, so a command costs its own work, not ~4 s of importing every client plug-in again.
One request per line on stdin, {"argv": [...]}; one answer per line on stdout,
{"code": N, "stdout": "...", "stderr": "..."}.
"""
import io
import json
import logging
import sys
import traceback

from osc_lib.clientmanager import ClientCache
from openstackclient.common.clientmanager import ClientManager
from openstackclient.shell import OpenStackShell

channel = sys.stdout


def forget_clients():
    """A plug-in's client is cached on a descriptor of the ClientManager class, not on the instance:
    a process runs one command, so the next command (another cloud's) would get this one's client."""
    for cls in ClientManager.__mro__:
        for attribute in vars(cls).values():
            if isinstance(attribute, ClientCache):
                attribute._handle = None


def run(argv):
    forget_clients()
    out, err = io.StringIO(), io.StringIO()
    # Each shell configures logging onto the stderr it sees; an earlier command's handlers would
    # write into that command's (finished) buffer.
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    sys.stdout, sys.stderr = out, err
    try:
        code = OpenStackShell().run(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc(file=err)
        code = 1
    finally:
        sys.stdout, sys.stderr = channel, sys.__stderr__
    return {"code": 0 if code is None else code, "stdout": out.getvalue(), "stderr": err.getvalue()}


for line in sys.stdin:
    channel.write(json.dumps(run(json.loads(line)["argv"])) + "\n")
    channel.flush()
