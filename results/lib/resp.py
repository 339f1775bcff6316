"""The RESP encoding the dated results scripts that talk to redis-server directly share (one way to
write a command, so every script's figures count the same bytes). A script imports it by its path from
its own directory:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
    from resp import enc
"""


def enc(*args):
    """One command as a RESP array of bulk strings; an argument that is not bytes is sent as its str."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)
