"""HikariCP's defaults from the real library (Debian's libhikaricp-java, 2.7.9; the
reader cites 5.1.0/6.0.0 source, where the same constants stand): a HikariConfig
validated with only a JDBC URL has maximumPoolSize 10 and minimumIdle 10, and
setMaximumPoolSize(0) throws the message pool-advisor quotes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.read.apps import hikari

JARS = [Path("/usr/share/java/HikariCP.jar"), Path("/usr/share/java/slf4j-api.jar")]
PROBE = """
import com.zaxxer.hikari.HikariConfig;
import java.lang.reflect.Method;
public class Probe {
    public static void main(String[] a) throws Exception {
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl("jdbc:postgresql://db/app");
        Method v = HikariConfig.class.getDeclaredMethod("validate");
        v.setAccessible(true);
        v.invoke(c);
        System.out.println(c.getMaximumPoolSize() + " " + c.getMinimumIdle());
        try { c.setMaximumPoolSize(0); System.out.println("accepted"); }
        catch (IllegalArgumentException e) { System.out.println(e.getMessage()); }
    }
}
"""


def test_real_hikaricp_defaults(tmp_path):
    if shutil.which("java") is None or not all(j.is_file() for j in JARS):
        pytest.skip("java or libhikaricp-java missing (scripts/test installs them)")
    (tmp_path / "Probe.java").write_text(PROBE)
    out = subprocess.run(["java", "-cp", ":".join(map(str, JARS)),
                          str(tmp_path / "Probe.java")], capture_output=True, text=True,
                         timeout=120, check=True)
    sizes, message = out.stdout.strip().splitlines()[-2:]
    assert sizes == f"{hikari.DEFAULT_POOL_SIZE} {hikari.DEFAULT_POOL_SIZE}"
    assert message == "maxPoolSize cannot be less than 1"
    assert message in hikari.__doc__
