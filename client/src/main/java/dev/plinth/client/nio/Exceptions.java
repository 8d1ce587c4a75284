package dev.plinth.client.nio;

import dev.plinth.common.PlinthException;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystemLoopException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/** Plinth errors as the IOException subclasses java.nio.file callers test for. */
final class Exceptions {
    private Exceptions() {}

    static IOException toIOException(PlinthException e, Object path) {
        String file = path == null ? null : path.toString();
        IOException result = switch (e.code()) {
            case NOT_FOUND -> new NoSuchFileException(file, null, e.getMessage());
            case ALREADY_EXISTS -> new FileAlreadyExistsException(file, null, e.getMessage());
            case DIRECTORY_NOT_EMPTY -> new DirectoryNotEmptyException(file);
            case NOT_A_DIRECTORY -> new NotDirectoryException(file);
            case PERMISSION_DENIED, OPERATION_NOT_PERMITTED -> new AccessDeniedException(file, null, e.getMessage());
            case SYMLINK_LOOP -> new FileSystemLoopException(file);
            default -> new FileSystemException(file, null, e.getMessage());
        };
        result.initCause(e);
        return result;
    }
}
