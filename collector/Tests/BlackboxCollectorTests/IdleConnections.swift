/// A python program that opens `count` connections to a port and writes `<ready>` once they are
/// open; then it holds them until killed (`hold`), or waits up to 30 s for the server to close each
/// and writes how many it closed to `<ready>.closed` (`until-closed`). Many idle connections are
/// held by a process of their own: in the test process they would take its descriptors past 1,024,
/// where Foundation's `Process` (its CFSocket `select`) corrupts memory for every test that runs a
/// program meanwhile (parallel runs hung for good and reset other tests' connections).
enum IdleConnections {
    static let script = """
        import os, resource, socket, sys, time
        port, count, ready, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 64)), hard))
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        open(ready, "w").close()
        if mode == "hold":
            while True:
                time.sleep(60)
        deadline = time.monotonic() + 30
        closed = 0
        for connection in held:
            connection.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                if connection.recv(1) == b"":
                    closed += 1
            except ConnectionResetError:
                closed += 1
            except OSError:
                pass
        with open(ready + ".closed", "w") as file:
            file.write(str(closed))
        """
}
