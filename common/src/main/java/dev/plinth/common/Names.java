package dev.plinth.common;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Validation of directory entry names and absolute paths, as every entry point applies them. */
public final class Names {
    public static final int NAME_BYTES_MAX = 255;
    public static final int PATH_BYTES_MAX = 4096;

    private Names() {}

    /** Rejects "", ".", "..", names containing '/' or NUL, and names longer than 255 UTF-8 bytes. */
    public static String validateName(String name) {
        if (name == null || name.isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "empty name");
        }
        if (name.equals(".") || name.equals("..")) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "name '" + name + "' is reserved");
        }
        if (name.indexOf('/') >= 0 || name.indexOf('\0') >= 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "name contains '/' or NUL");
        }
        if (name.getBytes(StandardCharsets.UTF_8).length > NAME_BYTES_MAX) {
            throw new PlinthException(ErrorCode.NAME_TOO_LONG, "name longer than " + NAME_BYTES_MAX + " bytes");
        }
        return name;
    }

    /**
     * Splits an absolute path into its components, dropping empty and "." components. ".." is
     * kept, since only the namespace can resolve it; every other component is validated.
     */
    public static List<String> components(String path) {
        if (path == null || path.isEmpty() || path.charAt(0) != '/') {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "path must be absolute: '" + path + "'");
        }
        if (path.getBytes(StandardCharsets.UTF_8).length > PATH_BYTES_MAX) {
            throw new PlinthException(ErrorCode.NAME_TOO_LONG, "path longer than " + PATH_BYTES_MAX + " bytes");
        }
        List<String> result = new ArrayList<>();
        for (String component : path.split("/")) {
            if (component.isEmpty() || component.equals(".")) {
                continue;
            }
            if (!component.equals("..")) {
                validateName(component);
            }
            result.add(component);
        }
        return result;
    }

    /** The parent of a normalized absolute path ("/" for a top-level entry). */
    public static String parent(String path) {
        List<String> parts = components(path);
        if (parts.isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "the root has no parent");
        }
        return "/" + String.join("/", parts.subList(0, parts.size() - 1));
    }

    /** The last component of an absolute path. */
    public static String lastName(String path) {
        List<String> parts = components(path);
        if (parts.isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "the root has no name");
        }
        return parts.getLast();
    }
}
