"""Remote storage and a standalone Spark cluster, all on 127.0.0.1, for the slow tests and the remote bench.

* :class:`MotoS3`: an S3 API served by ``moto`` in server mode (the ``moto[server]`` test extra), read by
  Spark through ``s3a://`` with Hadoop's ``hadoop-aws`` and the AWS SDK bundle it names;
* :class:`MiniHdfs`: HDFS as Hadoop's own tests run it, a namenode and a datanode in one JVM
  (``org.apache.hadoop.test.MiniDFSClusterManager`` of ``hadoop-client-minicluster``);
* :class:`Cluster`: a Spark standalone master and workers (``bin/spark-class`` of the installed pyspark).

Every process is started here and stopped by the PID recorded at its start.  The jars come from Maven
Central the first time, fetched by the Ivy that pyspark ships (``java -jar ivy.jar``), at the version of
the Hadoop client jars pyspark ships, into a per-user cache (``$XDG_CACHE_HOME/kafkadump/jars``, else
``~/.cache/kafkadump/jars``): later runs fetch nothing.  Files are uploaded over HTTP (S3's PUT, WebHDFS),
so no JVM is needed for that.
"""

from __future__ import annotations

import glob
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

ACCESS_KEY = "kafkadump-test"      # moto accepts any; s3a must be given some
SECRET_KEY = "kafkadump-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening on 127.0.0.1:{port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} in {seconds:g} s")


# --- jars ------------------------------------------------------------------------------------

def spark_jars_dir() -> str:
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "jars")


def hadoop_version() -> str:
    """The version of the Hadoop client jars pyspark ships (hadoop-aws and the mini cluster must match)."""
    for name in os.listdir(spark_jars_dir()):
        m = re.fullmatch(r"hadoop-client-api-(.+)\.jar", name)
        if m:
            return m.group(1)
    raise RuntimeError(f"no hadoop-client-api jar in {spark_jars_dir()}")


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kafkadump", "jars")


def maven_jars(org: str, name: str, rev: str, transitive: bool = True) -> list[str]:
    """The jars of ``org:name:rev`` (with its runtime dependencies), from the cache or fetched once."""
    dest = os.path.join(cache_dir(), f"{org}+{name}+{rev}" + ("" if transitive else "+alone"))
    done = os.path.join(dest, "fetched")
    if not os.path.isfile(done):
        ivy = glob.glob(os.path.join(spark_jars_dir(), "ivy-*.jar"))
        if not ivy:
            raise RuntimeError(f"pyspark ships no Ivy jar in {spark_jars_dir()}")
        cmd = ["java", "-Xmx256m", "-jar", ivy[0], "-cache", os.path.join(cache_dir(), "ivy"),
               "-dependency", org, name, rev, "-confs", "default",
               "-retrieve", os.path.join(dest, "[artifact]-[revision](-[classifier]).[ext]")]
        if not transitive:
            cmd.append("-notransitive")
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if p.returncode != 0:
            raise RuntimeError(f"fetching {org}:{name}:{rev} failed: {p.stdout[-2000:]}{p.stderr[-2000:]}")
        with open(done, "w") as f:
            f.write(f"{org}:{name}:{rev}\n")
    return sorted(glob.glob(os.path.join(dest, "*.jar")))


def s3a_jars() -> list[str]:
    """hadoop-aws at pyspark's Hadoop version, with the AWS SDK bundle and the rest it needs at run time."""
    return maven_jars("org.apache.hadoop", "hadoop-aws", hadoop_version())


# MiniDFSCluster asserts with JUnit 5 (not shaded into hadoop-client-minicluster); Hadoop 3.5's own version
JUNIT_API = ("org.junit.jupiter", "junit-jupiter-api", "5.13.3")


def minicluster_classpath() -> str:
    jars = maven_jars("org.apache.hadoop", "hadoop-client-minicluster", hadoop_version(), transitive=False)
    jars += maven_jars(*JUNIT_API)
    spark = spark_jars_dir()
    mine = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-", "log4j-slf4j2-impl-", "log4j-api-",
            "log4j-core-", "log4j-1.2-api-", "jcl-over-slf4j-")
    jars += sorted(os.path.join(spark, n) for n in os.listdir(spark) if n.startswith(mine))
    return os.pathsep.join(jars)


# --- processes -------------------------------------------------------------------------------

class Service:
    """Processes started with their output in a log file under ``work``, stopped by their PIDs."""

    def __init__(self, work: str, name: str):
        os.makedirs(work, exist_ok=True)
        self.work = work
        self.log_path = os.path.join(work, f"{name}.log")
        self.log = open(self.log_path, "ab")
        self.procs: list[subprocess.Popen] = []

    def spawn(self, cmd: list[str], env: dict | None = None, cwd: str | None = None) -> subprocess.Popen:
        p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()
        self.log.close()


def _request(method: str, url: str, data: bytes | None = None, headers: dict | None = None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.status, r.read(), r.headers


class MotoS3(Service):
    """moto's S3 API on a free loopback port; ``python`` (default: this one) must have ``moto[server]``."""

    def __init__(self, work: str, python: str | None = None):
        super().__init__(work, "moto")
        self.python = python or os.environ.get("KAFKADUMP_TEST_MOTO_PYTHON") or sys.executable
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoS3:
        p = self.spawn([self.python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)])
        wait_for_port(self.port, p, "moto's S3 server", 120)
        return self

    def create_bucket(self, bucket: str) -> None:
        _request("PUT", f"{self.endpoint}/{bucket}")

    def put(self, bucket: str, key: str, data: bytes) -> None:
        _request("PUT", f"{self.endpoint}/{bucket}/{key}", data, {"Content-Type": "application/octet-stream"})

    def conf(self, credentials: bool = True) -> dict[str, str]:
        """Spark settings reading ``s3a://`` from this server (jars on the driver's and executors' classpath;
        never the EC2 metadata service: credentials come from these settings or the environment only)."""
        cp = os.pathsep.join(s3a_jars())
        out = {"spark.driver.extraClassPath": cp, "spark.executor.extraClassPath": cp,
               "spark.hadoop.fs.s3a.endpoint": self.endpoint,
               "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
               "spark.hadoop.fs.s3a.path.style.access": "true",
               "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
               "spark.hadoop.fs.s3a.aws.credentials.provider":
                   "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider,"
                   "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
               "spark.hadoop.fs.s3a.attempts.maximum": "1", "spark.hadoop.fs.s3a.retry.limit": "1"}
        if credentials:
            out.update({"spark.hadoop.fs.s3a.access.key": ACCESS_KEY, "spark.hadoop.fs.s3a.secret.key": SECRET_KEY})
        return out


class MiniHdfs(Service):
    """A namenode and one datanode in one JVM (Hadoop's MiniDFSCluster), on 127.0.0.1."""

    def __init__(self, work: str):
        super().__init__(work, "hdfs")
        self.rpc_port = free_port()
        self.http_port = free_port()
        self.url = f"hdfs://127.0.0.1:{self.rpc_port}"

    def start(self) -> MiniHdfs:
        data = os.path.join(self.work, "data")
        details = os.path.join(self.work, "details.json")
        cmd = ["java", "-Xmx384m", "-cp", minicluster_classpath(), "org.apache.hadoop.test.MiniDFSClusterManager",
               "-datanodes", "1", "-format", "-nnport", str(self.rpc_port), "-httpport", str(self.http_port),
               "-writeDetails", details, "-D", f"hadoop.tmp.dir={data}", "-D", f"test.build.data={data}",
               "-D", "dfs.namenode.rpc-bind-host=127.0.0.1", "-D", "dfs.namenode.http-bind-host=127.0.0.1",
               "-D", "dfs.replication=1", "-D", "dfs.permissions.enabled=false"]
        p = self.spawn(cmd, cwd=self.work)
        deadline = time.monotonic() + 240
        while not os.path.isfile(details):           # written once the datanode has joined
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the HDFS mini cluster did not start (see {self.log_path})")
            time.sleep(0.5)
        return self

    def put(self, path: str, data: bytes) -> None:
        """``path`` (absolute in HDFS) written through WebHDFS: the namenode names a datanode, which takes the bytes."""
        url = f"http://127.0.0.1:{self.http_port}/webhdfs/v1{path}?op=CREATE&user.name={_user()}&overwrite=true"
        req = urllib.request.Request(url, method="PUT")

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        try:
            urllib.request.build_opener(NoRedirect).open(req, timeout=120)
            raise RuntimeError(f"WebHDFS CREATE {path}: no redirect to a datanode")
        except urllib.error.HTTPError as e:
            if e.code != 307:
                raise
            location = e.headers["Location"]
        _request("PUT", location, data, {"Content-Type": "application/octet-stream"})

    def conf(self) -> dict[str, str]:
        return {"spark.hadoop.dfs.client.use.datanode.hostname": "false"}


def _user() -> str:
    import getpass

    return getpass.getuser()


def upload_tree(put, root: str, files: list[str]) -> list[str]:
    """``put(relative_path, bytes)`` for each of ``files`` (under ``root``); the relative paths."""
    out = []
    for f in files:
        rel = os.path.relpath(f, root)
        with open(f, "rb") as fh:
            put(rel, fh.read())
        out.append(rel)
    return out


def spark_class() -> tuple[str, dict]:
    from pyspark.find_spark_home import _find_spark_home

    home = _find_spark_home()
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1",
           "SPARK_DAEMON_MEMORY": "256m"}
    return os.path.join(home, "bin", "spark-class"), env


class Cluster(Service):
    """A Spark standalone master (started by :meth:`start_master`) and workers (:meth:`start_worker`)."""

    def __init__(self, work: str):
        super().__init__(work, "cluster")
        self.launcher, self.env = spark_class()
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"

    def start_master(self) -> Cluster:
        p = self.spawn([self.launcher, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                        "--port", str(self.port), "--webui-port", str(free_port())], env=self.env)
        wait_for_port(self.port, p, "the standalone master")
        return self

    def start_worker(self, cores: int = 2, memory: str = "1g") -> None:
        n = sum(1 for p in self.procs) - 1
        self.spawn([self.launcher, "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                    "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", str(cores),
                    "--memory", memory, "--work-dir", os.path.join(self.work, f"worker{n}")], env=self.env)


def cluster_conf(pythonpath: str | None = None, executors: int = 2) -> dict[str, str]:
    """The executors' Python and import path, small executors, the driver on the loopback interface."""
    if pythonpath is None:
        pythonpath = os.environ.get("PYTHONPATH", "")
    return {"spark.pyspark.python": sys.executable, "spark.executorEnv.PYTHONPATH": pythonpath,
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.memory": "512m", "spark.executor.memory": "512m", "spark.executor.cores": "1",
            "spark.cores.max": str(executors), "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "4", "spark.ui.showConsoleProgress": "false"}


def conf_args(conf: dict[str, str]) -> list[str]:
    return [x for k, v in conf.items() for x in ("--conf", f"{k}={v}")]


def kafkadump(args: list[str], timeout: float = 900) -> subprocess.CompletedProcess:
    """``kafkadump ARGS`` as a user runs it: a process of its own (a driver JVM of its own)."""
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def details(path: str) -> dict:
    with open(path) as f:
        return json.load(f)
