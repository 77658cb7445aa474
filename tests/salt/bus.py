"""The minion's event bus for a masterless test, where no salt-minion daemon runs: this process holds the
minion's event publisher (the sockets `event.fire` writes to), listens on it as a reactor would, and prints
each event as one JSON line ({"tag", "data"}) on stdout. Run by the Salt venv's python:

    python bus.py <minion config dir>

It prints {"ready": true} once it listens; it stops when stdin closes.
"""

import json
import os
import sys
import threading
import time

import salt.config
import salt.transport
import salt.utils.event


def main():
    opts = salt.config.minion_config(os.path.join(sys.argv[1], 'minion'))
    opts['file_client'] = 'local'
    os.makedirs(opts['sock_dir'], exist_ok=True)
    publisher = salt.transport.ipc_publish_server('minion', opts)
    threading.Thread(target=publisher.publish_daemon, args=(publisher.publish_payload,), daemon=True).start()
    # Wait for both of the publisher's sockets, so that the first event.fire finds them.
    deadline = time.time() + 20
    while len([p for p in os.listdir(opts['sock_dir']) if p.startswith('minion_event_')]) < 2:
        if time.time() > deadline:
            sys.exit('bus.py: the event publisher did not bind its sockets in %s' % opts['sock_dir'])
        time.sleep(0.05)
    listener = salt.utils.event.get_event('minion', opts=opts, listen=True)
    while not listener.connect_pub(timeout=1):
        pass
    print(json.dumps({'ready': True}), flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    while True:
        event = listener.get_event(wait=1, full=True)
        if event:
            print(json.dumps({'tag': event['tag'], 'data': event['data']}, default=str), flush=True)


if __name__ == '__main__':
    main()
