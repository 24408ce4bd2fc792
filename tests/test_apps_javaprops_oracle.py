"""advisor/read/apps/javaprops.py against the real java.util.Properties.load(Reader) (JDK 17):
for every file in tests/javaprops_corpus/ the keys and values must be identical."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.read.apps.javaprops import parse_properties

CORPUS = sorted((Path(__file__).parent / "javaprops_corpus").glob("*.properties"))

DUMP = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class Dump {
    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            boolean plain = c != '"' && c != '\\' && c >= 0x20 && c <= 0x7e;
            if (plain) b.append(c);
            else b.append(String.format("\\u%04x", (int) c));
        }
        return b.append('"').toString();
    }
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < args.length; i++) {
            Properties p = new Properties();
            InputStream in = new FileInputStream(args[i]);
            try (Reader r = new InputStreamReader(in, StandardCharsets.UTF_8)) {
                p.load(r);
            }
            out.append(i == 0 ? "{" : ",{");
            boolean first = true;
            for (String k : new TreeSet<>(p.stringPropertyNames())) {
                out.append(first ? "" : ",").append(quote(k)).append(":");
                out.append(quote(p.getProperty(k)));
                first = false;
            }
            out.append("}");
        }
        System.out.println(out.append("]"));
    }
}
"""


@pytest.fixture(scope="module")
def java_says(tmp_path_factory) -> list[dict[str, str]]:
    java = shutil.which("java")
    if java is None:
        pytest.skip("java not installed")
    src = tmp_path_factory.mktemp("java") / "Dump.java"
    src.write_text(DUMP)
    out = subprocess.run([java, str(src), *map(str, CORPUS)], capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("index", range(len(CORPUS)), ids=[p.name for p in CORPUS])
def test_same_as_java_util_properties(java_says, index):
    text = CORPUS[index].read_bytes().decode("utf-8")
    ours = {e.key: e.value for doc in parse_properties(text) for e in doc}
    assert ours == java_says[index]
