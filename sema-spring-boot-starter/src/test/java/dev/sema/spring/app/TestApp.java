package dev.sema.spring.app;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The application of the web tests: controllers over @WithPermits services, and paths behind the sema.web filter. */
@SpringBootApplication
public class TestApp {
}
