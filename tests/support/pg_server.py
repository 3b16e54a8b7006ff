"""A throwaway PostgreSQL server for the tests: initdb and pg_ctl (Debian's
`postgresql`) in a temporary folder, listening on a Unix socket only
(listen_addresses = '', so no TCP port is opened).

    with PgServer() as pg:
        url = pg.url(study="s1")   # postgresql:///sieve?host=/tmp/...&user=sieve&study=s1

Authentication: `trust` for the user `sieve` (the socket's folder is
private to the server's owner), a password (scram-sha-256) for the user
`sieve_pw`, to test refused credentials.  Run as root, the server runs as
the `postgres` system user (initdb refuses root).  `PgServer.skip_reason()`
says why the tests cannot run here, or None."""
import os
import pwd
import shutil
import subprocess
import tempfile

BIN_DIRS = ["/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"]
PASSWORD = "s3cret-Pa55word"


def find_bin(name):
    for d in BIN_DIRS:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return shutil.which(name)


class PgServer:
    @staticmethod
    def skip_reason():
        if find_bin("initdb") is None or find_bin("pg_ctl") is None:
            return "PostgreSQL is not installed (Debian's postgresql: scripts/setup.sh installs it)"
        if os.getuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return "running as root and there is no 'postgres' user to run the server as"
        return None

    def __init__(self):
        self.tmp = None

    def _as_owner(self, args, **kw):
        if os.getuid() == 0:
            args = ["runuser", "-u", "postgres", "--"] + args
        return subprocess.run(args, capture_output=True, text=True, **kw)

    def start(self):
        self.tmp = tempfile.mkdtemp(prefix="sieve-pg-")
        self.data = os.path.join(self.tmp, "data")
        self.socket_dir = os.path.join(self.tmp, "socket")
        os.makedirs(self.socket_dir)
        pwfile = os.path.join(self.tmp, "pw")
        with open(pwfile, "w") as f:
            f.write(PASSWORD + "\n")
        if os.getuid() == 0:
            pw = pwd.getpwnam("postgres")
            for p in (self.tmp, self.socket_dir, pwfile):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        os.chmod(self.tmp, 0o700)
        p = self._as_owner([find_bin("initdb"), "-D", self.data, "-U", "sieve", "--auth=trust", "-E", "UTF8",
                            "--no-sync", "--locale=C"])
        if p.returncode != 0:
            raise RuntimeError("initdb failed:\n" + p.stdout + p.stderr)
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as f:
            f.write("local all sieve_pw scram-sha-256\nlocal all all trust\n")
        if os.getuid() == 0:
            os.chown(os.path.join(self.data, "pg_hba.conf"), pw.pw_uid, pw.pw_gid)
        self.restart()
        self.psql("CREATE DATABASE sieve")
        self.psql(f"CREATE ROLE sieve_pw LOGIN PASSWORD '{PASSWORD}'; GRANT ALL ON DATABASE sieve TO sieve_pw")
        return self

    def restart(self):
        """Starts the server (again, after stop())."""
        opts = f"-c listen_addresses='' -k {self.socket_dir} -c fsync=off -c max_connections=300"
        p = self._as_owner([find_bin("pg_ctl"), "-D", self.data, "-o", opts, "-l",
                            os.path.join(self.tmp, "log"), "-w", "start"])
        if p.returncode != 0:
            raise RuntimeError("pg_ctl start failed:\n" + p.stdout + p.stderr + self.log())

    def log(self):
        try:
            with open(os.path.join(self.tmp, "log")) as f:
                return f.read()
        except OSError:
            return ""

    def psql(self, sql, db="postgres"):
        p = subprocess.run([find_bin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", self.socket_dir,
                            "-U", "sieve", "-d", db, "-At", "-c", sql], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"psql {sql!r}: {p.stderr}")
        return p.stdout

    def url(self, study=None, user="sieve", extra=""):
        u = f"postgresql:///sieve?host={self.socket_dir}&user={user}"
        if study:
            u += f"&study={study}"
        return u + extra

    def stop(self, mode="fast"):
        if self.tmp and os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self._as_owner([find_bin("pg_ctl"), "-D", self.data, "-m", mode, "-w", "stop"])

    def cleanup(self):
        self.stop("immediate")
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()
