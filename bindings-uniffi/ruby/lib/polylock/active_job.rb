# frozen_string_literal: true

require 'polylock'
require_relative 'active_job/singleton'
