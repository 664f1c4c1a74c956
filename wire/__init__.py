"""plurm.wire: what crosses a socket: the client, the ZMTP client, the JSON codec, the
message schemas and records (model, protocol), and the signed envelope."""
