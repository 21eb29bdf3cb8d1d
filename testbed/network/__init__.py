"""The emulated network: planning, shaping and bringing up the namespaces, checking and
drawing them (`live.live_network` is the entry). Imports only `base`."""
