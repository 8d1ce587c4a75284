package dev.plinth.datasets;

import java.util.Locale;

/**
 * WebDataset's rule for sample keys: a member's key is its path up to the first dot of its file
 * name, its extension everything after that dot ({@code train/0001.seg.png}: key
 * {@code train/0001}, extension {@code seg.png}); consecutive members with one key are one sample.
 * The library drops a name without a dot in its file name or starting with one, and lower-cases
 * extensions, so such names are refused by the packer (upper-case extensions are lower-cased only
 * when asked).
 */
public final class SampleNames {
    private SampleNames() {}

    /** A member name split by the rule; {@code problem} says why the library would drop or change it (null: fine). */
    public record Split(String key, String extension, String problem) {}

    public static Split split(String path) {
        int slash = path.lastIndexOf('/');
        String fileName = path.substring(slash + 1);
        if (fileName.startsWith(".")) {
            return new Split(null, null, "file name starts with a dot (WebDataset skips it)");
        }
        int dot = fileName.indexOf('.');
        if (dot < 0) {
            return new Split(null, null, "no dot in the file name, so no extension (WebDataset drops it)");
        }
        String key = path.substring(0, slash + 1 + dot);
        String extension = fileName.substring(dot + 1);
        if (extension.isEmpty()) {
            return new Split(key, extension, "empty extension (WebDataset drops it)");
        }
        if (!extension.equals(extension.toLowerCase(Locale.ROOT))) {
            return new Split(key, extension, "upper-case extension (WebDataset lower-cases it: pack with --lowercase-extensions)");
        }
        if (path.indexOf('\uFFFD') >= 0 || path.indexOf('\0') >= 0) {
            return new Split(key, extension, "name is not valid UTF-8 (a tar member name must be)");
        }
        return new Split(key, extension, null);
    }
}
