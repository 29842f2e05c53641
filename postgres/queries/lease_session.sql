-- The lease's session: if the holder's machine vanishes without closing the
-- connection, the server notices within about 25 s (instead of the
-- kernel's two hours) and releases the lock, so a waiting replica takes
-- over in bounded time. Ignored on Unix sockets. One simple-protocol string,
-- no parameters.
SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3
