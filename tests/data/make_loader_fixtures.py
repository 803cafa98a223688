#!/usr/bin/env python3
"""Writes the small CSV/NPY fixtures used by tests/test_loaders.cpp (standard library only).

Run from anywhere: python3 tests/data/make_loader_fixtures.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
BAD = os.path.join(HERE, "bad")


def write(path, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    kwargs = {} if mode == "wb" else {"newline": ""}
    with open(path, mode, **kwargs) as f:
        f.write(data)


def npy(descr="<f8", fortran=False, shape=(3, 3), values=None, version=(1, 0), pad=True,
        header=None, magic=b"\x93NUMPY", data=None):
    """NPY bytes; `header` overrides the dict text, `data` the payload."""
    if header is None:
        shape_txt = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
            descr, "True" if fortran else "False", shape_txt)
    hb = header.encode("latin1")
    pre_len = 10 if version[0] == 1 else 12
    if pad:
        total = pre_len + len(hb) + 1
        hb += b" " * ((64 - total % 64) % 64) + b"\n"
    pre = magic + bytes(version)
    pre += struct.pack("<H", len(hb)) if version[0] == 1 else struct.pack("<I", len(hb))
    if data is None:
        if values is None:
            n = 1
            for s in shape:
                n *= s
            values = [float(i % 2 * 2 - 1) if i % shape[-1] == 0 else i * 0.25 for i in range(n)]
        fmt = {"<f8": "d", "<f4": "f", ">f8": "d", "<i8": "q"}[descr]
        endian = ">" if descr.startswith(">") else "<"
        if fmt == "q":
            values = [int(v) for v in values]
        data = struct.pack(endian + fmt * len(values), *values)
    return pre + hb + data


def main():
    os.makedirs(BAD, exist_ok=True)
    # ---- good CSV
    write(os.path.join(HERE, "good_header_crlf.csv"),
          "label,x1,x2\r\n1, 0.5 ,-2\r\n-1,+1.25e-3,3\r\n1,7,8\r\n\r\n\r\n")
    write(os.path.join(HERE, "good_noheader.csv"), "1,0.5,-2\n-1,1.5,3\n")
    write(os.path.join(HERE, "good_01.csv"), "y,a,b\n0,1,2\n1,3,4\n0,5,6\n")
    write(os.path.join(HERE, "good_categorical.csv"), "label,x1\n0,1\n2,2\n1,3\n2,4\n")
    # ---- bad CSV
    write(os.path.join(BAD, "empty.csv"), "")
    write(os.path.join(BAD, "blank_only.csv"), "\n  \r\n\n")
    write(os.path.join(BAD, "header_only.csv"), "label,x1,x2\n")
    write(os.path.join(BAD, "non_numeric.csv"), "label,x1,x2\n1,0.5,2\n-1,0.5,abc\n")
    write(os.path.join(BAD, "empty_field.csv"), "label,x1,x2\n1,,2\n")
    write(os.path.join(BAD, "nan.csv"), "label,x1,x2\n1,0.5,2\n-1,nan,1\n")
    write(os.path.join(BAD, "inf.csv"), "1,0.5,2\n-1,1,-inf\n")
    write(os.path.join(BAD, "overflow.csv"), "1,1e400,2\n")
    write(os.path.join(BAD, "ragged_short.csv"), "label,x1,x2\n1,2,3\n-1,2\n")
    write(os.path.join(BAD, "ragged_long.csv"), "1,2,3\n-1,2,3\n1,2,3,4\n")
    write(os.path.join(BAD, "one_column.csv"), "label\n1\n-1\n")
    write(os.path.join(BAD, "blank_middle.csv"), "label,x1\n1,2\n\n-1,3\n")
    write(os.path.join(BAD, "label_2.csv"), "label,x1\n1,2\n-1,3\n2,4\n")
    write(os.path.join(BAD, "label_half.csv"), "label,x1\n0,2\n0.5,3\n")
    write(os.path.join(BAD, "label_mixed.csv"), "label,x1\n-1,2\n1,3\n0,4\n")
    write(os.path.join(BAD, "label_negative_class.csv"), "label,x1\n0,2\n-1,3\n")
    write(os.path.join(BAD, "label_fractional_class.csv"), "label,x1\n0,2\n1.5,3\n")
    # ---- good NPY
    vals = [1.0, 0.5, -2.0, -1.0, 1.25e-3, 3.0]
    write(os.path.join(HERE, "good_f8.npy"), npy(shape=(2, 3), values=vals))
    write(os.path.join(HERE, "good_f4.npy"), npy(descr="<f4", shape=(2, 3), values=vals))
    write(os.path.join(HERE, "good_v2.npy"), npy(shape=(2, 3), values=vals, version=(2, 0)))
    write(os.path.join(HERE, "good_v3.npy"), npy(shape=(2, 3), values=vals, version=(3, 0)))
    write(os.path.join(HERE, "good_01.npy"), npy(shape=(2, 2), values=[0.0, 1.0, 1.0, 2.0]))
    # ---- bad NPY
    write(os.path.join(BAD, "empty.npy"), b"")
    write(os.path.join(BAD, "bad_magic.npy"), npy(magic=b"\x93NUMPZ"))
    write(os.path.join(BAD, "short.npy"), b"\x93NUM")
    write(os.path.join(BAD, "version_4.npy"), npy(version=(4, 0)))
    write(os.path.join(BAD, "dtype_i8.npy"), npy(descr="<i8"))
    write(os.path.join(BAD, "dtype_big_endian.npy"), npy(descr=">f8"))
    write(os.path.join(BAD, "fortran.npy"), npy(fortran=True))
    write(os.path.join(BAD, "ndim1.npy"), npy(shape=(6,)))
    write(os.path.join(BAD, "ndim3.npy"), npy(shape=(2, 2, 2)))
    write(os.path.join(BAD, "one_column.npy"), npy(shape=(3, 1)))
    write(os.path.join(BAD, "zero_rows.npy"), npy(shape=(0, 3)))
    write(os.path.join(BAD, "header_garbage.npy"),
          npy(header="{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3) ]"))
    write(os.path.join(BAD, "header_missing_key.npy"),
          npy(header="{'descr': '<f8', 'shape': (3, 3), }"))
    write(os.path.join(BAD, "header_unterminated.npy"),
          npy(header="{'descr': '<f8}"))
    full = npy(shape=(3, 3))
    write(os.path.join(BAD, "header_truncated.npy"), full[:40])
    write(os.path.join(BAD, "truncated_data.npy"), full[:-5])
    write(os.path.join(BAD, "trailing_bytes.npy"), full + b"\0" * 8)
    write(os.path.join(BAD, "nan.npy"), npy(shape=(3, 3), values=[1, 2, 3, -1, 4, float("nan"),
                                                                  1, 5, 6]))
    write(os.path.join(BAD, "inf_f4.npy"), npy(descr="<f4", shape=(2, 2),
                                               values=[1, 2, float("-inf"), 3]))
    write(os.path.join(BAD, "label_2.npy"), npy(shape=(2, 2), values=[1, 2, 2, 3]))


if __name__ == "__main__":
    main()
